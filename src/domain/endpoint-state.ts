// What people are told of an outbound endpoint's state (docs/api.md, "Endpoints"), the same in the console and the CLI.

/** Why an endpoint is off: it answered 410, it failed every attempt for five days, or an operator turned it off. */
export type EndpointDisabledReason = 'gone' | 'failing' | 'operator';

export const disabledReasonText: Record<EndpointDisabledReason, string> = {
  gone: 'it answered 410 Gone',
  failing: 'every attempt failed for 5 days',
  operator: 'an operator turned it off',
};
