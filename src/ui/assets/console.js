// The console's only script: an open album page keeps itself current, and the operator-action
// buttons post to the status API. Loaded from the console's own origin (CSP script-src 'self').
'use strict';

/** Replaces the live part of the page with the same part of a fresh copy of it. */
async function refreshAlbum() {
  const response = await fetch(window.location.href, { cache: 'no-store', headers: { accept: 'text/html' } });
  if (!response.ok) return null;
  const fresh = new DOMParser().parseFromString(await response.text(), 'text/html').getElementById('album-live');
  const current = document.getElementById('album-live');
  if (!fresh || !current) return null;
  current.replaceWith(document.adoptNode(fresh));
  return fresh;
}

/**
 * Asks the console for the album's version (one PostgreSQL read, no Temporal query) and fetches the
 * page again only when it changed; stops once the album is closed.
 */
function followAlbum() {
  const live = document.getElementById('album-live');
  const url = live && live.dataset.liveUrl;
  if (!url) return;
  const pollMs = Number(live.dataset.pollMs) || 2000;
  let version = live.dataset.liveVersion;
  let timer;

  async function poll() {
    timer = undefined;
    if (document.hidden) return;
    try {
      const response = await fetch(url, { cache: 'no-store', headers: { accept: 'application/json' } });
      if (response.ok) {
        const body = await response.json();
        if (body.version !== version) {
          const fresh = await refreshAlbum();
          if (fresh) version = fresh.dataset.liveVersion;
        }
        // Closed: the page stops here; a child that reopens the album shows on the next load.
        if (body.state === 'closed') return;
      }
    } catch {
      // The server is unreachable for now; the next poll tries again.
    }
    timer = setTimeout(poll, pollMs);
  }

  document.addEventListener('visibilitychange', () => {
    if (!document.hidden && timer === undefined) void poll();
  });
  timer = setTimeout(poll, pollMs);
}

function showResult(text, ok) {
  const output = document.querySelector('.action-result');
  if (!output) return;
  output.textContent = text;
  output.classList.toggle('error', !ok);
}

async function runAction(url, body) {
  try {
    const response = await fetch(url, {
      method: 'POST',
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (response.ok) {
      showResult('Done. The page shows the outcome as it comes.', true);
      await refreshAlbum();
      return;
    }
    const error = await response.json().catch(() => null);
    showResult(`Refused (${response.status}): ${(error && error.error && error.error.message) || response.statusText}`, false);
  } catch {
    showResult('The console could not reach the server.', false);
  }
}

document.addEventListener('click', (event) => {
  const button = event.target instanceof Element ? event.target.closest('button[data-action-url]') : null;
  if (button) void runAction(button.dataset.actionUrl, undefined);
});

document.addEventListener('submit', (event) => {
  const form = event.target;
  if (!(form instanceof HTMLFormElement) || !form.dataset.actionUrl) return;
  event.preventDefault();
  void runAction(form.dataset.actionUrl, { note: new FormData(form).get('note') || '' });
});

followAlbum();
