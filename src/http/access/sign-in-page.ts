import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../common/paths.js';
import { consolePath, signInPath } from './plugin.js';

/**
 * The console's stylesheet, carried in the page: the console's assets need a token, and whoever signs in has
 * none yet. The Content-Security-Policy allows this one stylesheet by its digest, and no other style.
 */
export const consoleStylesheet = fs.readFileSync(path.join(projectRoot, 'src/ui/assets/console.css'), 'utf8');
const stylesheetSource = `'sha256-${crypto.createHash('sha256').update(consoleStylesheet).digest('base64')}'`;

const escapes: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => escapes[char] ?? char);
}

/**
 * Headers of the sign-in page: no script, no framing, never cached, no referrer that could carry a code; the
 * console's stylesheet its only style.
 */
export const signInPageHeaders = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': `default-src 'none'; style-src ${stylesheetSource}; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`,
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
};

/** The console's layout (src/ui/templates/layout.eta) without its navigation: its stylesheet and bar. */
function page(body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sign in · albumflow</title>
<style>${consoleStylesheet}</style>
</head>
<body>
<header class="bar">
  <a class="brand" href="${consolePath}">albumflow</a>
</header>
<main class="narrow sign-in">
<h1>Sign in to albumflow</h1>
${body}</main>
</body>
</html>
`;
}

const alert = (message: string | undefined) => (message ? `<p role="alert" class="notice error">${escapeHtml(message)}</p>\n` : '');

/** The console's sign-in page: one form that posts a token to `POST /ui/sign-in`. */
export function signInPage({ next, message }: { next: string; message?: string }): string {
  return page(`${alert(message)}<form method="post" action="${signInPath}">
<input type="hidden" name="next" value="${escapeHtml(next)}">
<label>Token <input type="password" name="token" autocomplete="current-password" required></label>
<button type="submit">Sign in</button>
</form>
<p>Use a token of API_TOKENS. Without API_TOKENS, albumflow prints a sign-in link when it starts, and keeps its admin token in the file admin-token of its data directory.</p>
`);
}

/**
 * The page a sign-in link opens: one button that posts its code to `POST /ui/sign-in`. Opening the link
 * (a GET, or a HEAD from a link preview or a mail scanner) does not use the code up; pressing the button does.
 */
export function signInCodePage({ code, next }: { code: string; next: string }): string {
  return page(`<form method="post" action="${signInPath}">
<input type="hidden" name="code" value="${escapeHtml(code)}">
<input type="hidden" name="next" value="${escapeHtml(next)}">
<button type="submit">Sign in</button>
</form>
<p>This link signs one browser in, once.</p>
`);
}
