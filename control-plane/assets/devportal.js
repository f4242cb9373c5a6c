// The developer portal's one script. Its try-it console asks the portal for an access token of the chosen application (a same-origin form post with the page's CSRF
// token), then sends the request straight to the chosen gateway, which must allow this
// origin by the API's CORS configuration; it shows the status, the headers the gateway
// exposes and the body, as text only, and the same call as curl. The keys' page uses it to
// copy a key or secret.
'use strict';

const show = (id, text) => { document.getElementById(id).textContent = text; };

function tryIt(form) {
  const result = document.getElementById('try-result');
  form.hidden = false;
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const data = new FormData(form);
    result.hidden = false;
    show('try-status', 'Getting a token…');
    ['try-headers', 'try-response', 'try-curl'].forEach((id) => show(id, ''));
    const asked = new URLSearchParams();
    ['csrf_token', 'application_id', 'key_type'].forEach((name) => asked.append(name, data.get(name)));
    let token;
    try {
      const answer = await fetch(form.dataset.tokenUrl, { method: 'POST', body: asked, credentials: 'same-origin' });
      const body = await answer.json();
      if (!answer.ok) { show('try-status', body.error || 'No token: ' + answer.status); return; }
      token = body.access_token;
    } catch (error) {
      show('try-status', 'No token: ' + error.message);
      return;
    }
    const path = String(data.get('path') || '/');
    const url = String(data.get('gateway')) + form.dataset.context + (path.startsWith('/') ? path : '/' + path);
    const method = String(data.get('method'));
    const init = { method, headers: { Authorization: 'Bearer ' + token, Accept: 'application/json' } };
    const payload = String(data.get('body') || '');
    let curl = "curl -X " + method + " '" + url + "' -H 'Authorization: Bearer " + token + "'";
    if (payload && method !== 'GET' && method !== 'HEAD') {
      init.body = payload;
      init.headers['Content-Type'] = 'application/json';
      curl += " -H 'Content-Type: application/json' --data '" + payload.replace(/'/g, "'\\''") + "'";
    }
    show('try-curl', curl);
    show('try-status', 'Sending…');
    try {
      const answer = await fetch(url, init);
      show('try-status', answer.status + ' ' + answer.statusText);
      const headers = [];
      answer.headers.forEach((value, name) => headers.push(name + ': ' + value));
      show('try-headers', headers.join('\n'));
      show('try-response', await answer.text());
    } catch (error) {
      show('try-status', 'The gateway did not answer this page (' + error.message + '). '
        + "The API's CORS configuration must allow this portal's origin.");
    }
  });
  document.getElementById('try-copy').addEventListener('click', () => {
    navigator.clipboard.writeText(document.getElementById('try-curl').textContent);
  });
}

// Buttons that copy a value shown on the page (the keys'): hidden until this script runs,
// since they do nothing without it.
function copyButtons() {
  for (const button of document.querySelectorAll('button[data-copy]')) {
    button.hidden = false;
    button.addEventListener('click', async () => {
      const text = document.getElementById(button.dataset.copy).textContent;
      try {
        await navigator.clipboard.writeText(text);
        show('copied', 'Copied.');
      } catch (error) {
        show('copied', 'The browser did not let this page copy: select the text instead.');
      }
    });
  }
}

document.addEventListener('DOMContentLoaded', () => {
  const form = document.getElementById('try-it');
  if (form) tryIt(form);
  copyButtons();
});
