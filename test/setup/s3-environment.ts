import { inject } from 'vitest';

// The AWS SDK's standard variables, pointing every S3 client of this test process at the run's S3
// server (test/setup/global.ts): a test that sets MEDIA_STORE gets a store on it, as a deployment
// gets one from its environment. Only clients of a MEDIA_STORE read them.
const { accessKeyId, secretAccessKey } = inject('s3Credentials');
if (inject('s3Endpoint')) process.env.AWS_ENDPOINT_URL_S3 = inject('s3Endpoint');
process.env.AWS_REGION = 'us-east-1';
process.env.AWS_ACCESS_KEY_ID = accessKeyId;
process.env.AWS_SECRET_ACCESS_KEY = secretAccessKey;
// The SDK warns once per process that its releases after January 2027 need Node.js 22; not this lock's.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
