import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { errorBody, HttpError } from '../common/http-error.js';
import { TenantError, type TenantErrorKind } from '../tenants/service.js';

const fastifyCodes: Record<string, string> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'body_too_large',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported_media_type',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'invalid_content_length',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'empty_body',
  FST_ERR_CTP_INVALID_JSON_BODY: 'invalid_json',
  FST_ERR_VALIDATION: 'invalid_request',
  FST_ERR_BAD_URL: 'invalid_url',
  FST_ERR_MAX_PARAM_LENGTH: 'path_segment_too_long',
};

const tenantStatus: Record<TenantErrorKind, number> = { not_found: 404, name_taken: 409, read_only: 409, invalid: 400 };

/** A refused tenant change as the HTTP answer says it: its status, its code and its message. */
export function tenantHttpError(error: TenantError): HttpError {
  return new HttpError(tenantStatus[error.kind], error.code, error.message);
}

/** Maps every error to the albumflow error body; messages of 5xx errors never reach the client. */
export function handleError(error: FastifyError | HttpError | TenantError, request: FastifyRequest, reply: FastifyReply): void {
  if (error instanceof TenantError) return handleError(tenantHttpError(error), request, reply);
  if (error instanceof HttpError) {
    void reply.code(error.statusCode).headers(error.headers).send(errorBody(error.code, error.message));
    return;
  }
  const status = error.statusCode && error.statusCode >= 400 ? error.statusCode : 500;
  if (status >= 500) {
    request.log.error({ err: error }, 'request failed');
    void reply.code(status).send(errorBody('internal_error', 'internal server error'));
    return;
  }
  const code = (error.code && fastifyCodes[error.code]) ?? (error.validation ? 'invalid_request' : 'bad_request');
  void reply.code(status).send(errorBody(code, error.message));
}
