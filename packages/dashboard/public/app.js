// The dashboard page: plain DOM, no framework, no build step. Every value from the API is put
// into the page with textContent (never as HTML). The CSRF token lives only in this module's
// memory; a key or secret is shown once, in the #once box, and removed from the page when the
// user confirms (and never put in a URL).
/* global uPlot */

const $ = (id) => document.getElementById(id);
let csrf = '';
let current = null; // id of the key shown in #detail
let chart = null;
let timer = null;

class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

async function api(method, path, body) {
  const headers = { Accept: 'application/json' };
  if (method !== 'GET') {
    headers['Content-Type'] = 'application/json';
    headers['X-CSRF-Token'] = csrf;
  }
  const res = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'same-origin',
    cache: 'no-store',
  });
  const data = await res.json().catch(() => ({}));
  if (!res.ok) throw new ApiError(res.status, data.error || `HTTP ${res.status}`);
  return data;
}

function showError(err, where = 'error') {
  $(where).textContent = err ? String(err.message || err) : '';
}

function cell(tr, text, cls) {
  const td = document.createElement('td');
  td.textContent = text;
  if (cls) td.className = cls;
  tr.appendChild(td);
  return td;
}

const fmt = (n) => Number(n).toLocaleString('en-US');
const lines = (text) =>
  text
    .split('\n')
    .map((s) => s.trim())
    .filter((s) => s !== '');
const list = (text) =>
  text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
const numOrNull = (v) => (v === '' ? null : Number(v));

function showOnce(title, value) {
  $('once-title').textContent = title;
  $('once-value').textContent = value;
  $('once').hidden = false;
}

function clearOnce() {
  $('once-value').textContent = '';
  $('once').hidden = true;
}

async function loadKeys() {
  const keys = await api('GET', '/api/keys');
  const body = $('keys').querySelector('tbody');
  body.replaceChildren();
  for (const k of keys) {
    const tr = document.createElement('tr');
    tr.dataset.id = k.id;
    cell(tr, k.name || '(unnamed)');
    cell(tr, k.prefix ? `${k.prefix}…` : `id ${k.id}`).className = 'mono';
    cell(tr, k.plan);
    cell(tr, k.createdAt ? k.createdAt.slice(0, 16).replace('T', ' ') : '');
    cell(tr, k.lastUsed ? k.lastUsed.slice(0, 16).replace('T', ' ') : 'never');
    const st = cell(tr, k.status);
    st.className = `status ${k.status}`;
    const td = document.createElement('td');
    const b = document.createElement('button');
    b.type = 'button';
    b.textContent = 'Open';
    b.addEventListener('click', () => openKey(k.id).catch((e) => showError(e)));
    td.appendChild(b);
    tr.appendChild(td);
    body.appendChild(tr);
  }
}

async function loadPlans() {
  const plans = await api('GET', '/api/plans');
  const sel = $('create-plan');
  sel.replaceChildren();
  for (const p of plans) {
    const o = document.createElement('option');
    o.value = p.name;
    o.textContent = `${p.name} (${fmt(p.dailyCredits)} credits/day)`;
    sel.appendChild(o);
  }
}

function drawChart(days) {
  const xs = days.map((d) => Date.parse(`${d.day}T00:00:00Z`) / 1000);
  const ys = days.map((d) => d.credits);
  const el = $('chart');
  const width = Math.max(300, el.clientWidth - 2);
  if (chart) {
    chart.setData([xs, ys]);
    return;
  }
  chart = new uPlot(
    {
      width,
      height: 240,
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
      scales: {
        x: { time: true, range: (_u, min, max) => [min - 43200, max + 43200] },
        y: { range: (_u, _min, max) => [0, Math.max(10, max * 1.1)] },
      },
      axes: [{}, { values: (_u, vals) => vals.map((v) => fmt(v)), size: 70 }],
      legend: { show: true },
      series: [
        {},
        {
          label: 'credits',
          stroke: '#1f6feb',
          fill: 'rgba(31,111,235,0.25)',
          width: 1,
          paths: uPlot.paths.bars({ size: [0.7, 40] }),
          points: { show: false },
        },
      ],
    },
    [xs, ys],
    el,
  );
}

async function loadUsage() {
  if (!current) return;
  const u = await api('GET', `/api/keys/${current}/usage`);
  $('d-remaining').textContent = fmt(u.balance.remaining);
  $('d-resets').textContent = `resets at ${u.balance.resetsAt}`;
  $('d-used').textContent = fmt(u.balance.used);
  $('d-daily').textContent = `of ${fmt(u.balance.dailyCredits)} credits/day`;
  const tot = u.days.reduce(
    (a, d) => ({ calls: a.calls + d.calls, e4xx: a.e4xx + d.e4xx, e5xx: a.e5xx + d.e5xx, erpc: a.erpc + d.erpc }),
    { calls: 0, e4xx: 0, e5xx: 0, erpc: 0 },
  );
  $('d-calls').textContent = fmt(tot.calls);
  $('d-errors').textContent = `${fmt(tot.e4xx)} 4xx · ${fmt(tot.e5xx)} 5xx · ${fmt(tot.erpc)} JSON-RPC errors`;
  drawChart(u.days);
  const mb = $('methods').querySelector('tbody');
  mb.replaceChildren();
  for (const m of u.methods) {
    const tr = document.createElement('tr');
    cell(tr, m.method);
    for (const v of [m.calls, m.credits, m.e4xx, m.e5xx, m.erpc]) cell(tr, fmt(v), 'num');
    mb.appendChild(tr);
  }
  const nb = $('minutes').querySelector('tbody');
  nb.replaceChildren();
  for (const m of u.minutes) {
    const tr = document.createElement('tr');
    cell(tr, m.minute.slice(11, 16));
    cell(tr, fmt(m.calls), 'num');
    cell(tr, fmt(m.credits), 'num');
    cell(tr, fmt(m.e4xx + m.e5xx + m.erpc), 'num');
    nb.appendChild(tr);
  }
}

function fillDetail(k) {
  $('d-name').textContent = k.name || '(unnamed)';
  $('d-prefix').textContent = k.prefix ? `${k.prefix}…` : `id ${k.id}`;
  $('d-status').textContent = k.status;
  $('d-status').className = `status ${k.status}`;
  $('s-name').value = k.name;
  $('s-networks').value = (k.networks || []).join(', ');
  $('s-cpd').value = k.limits.creditsPerDay ?? '';
  $('s-cps').value = k.limits.creditsPerSecond ?? '';
  for (const t of ['addresses', 'origins', 'userAgents', 'methods']) $(`al-${t}`).value = k.allowlists[t].join('\n');
  $('secret-state').textContent = k.secret.set
    ? `A secret is set${k.secret.required ? ' and required for every request' : ' (optional: requests without it are accepted)'}.`
    : 'No secret.';
  $('secret-required').checked = k.secret.required;
  $('secret-required').disabled = !k.secret.set || k.status !== 'active';
  const revoked = k.status !== 'active';
  for (const id of ['save', 'rotate', 'revoke', 'secret-create']) $(id).disabled = revoked;
  $('secret-delete').disabled = !k.secret.set;
}

async function openKey(id) {
  current = id;
  const k = await api('GET', `/api/keys/${id}`);
  $('detail').hidden = false;
  fillDetail(k);
  await loadUsage();
  if (timer) clearInterval(timer);
  timer = setInterval(() => loadUsage().catch(() => {}), 3000);
}

async function refreshAll() {
  await loadKeys();
  if (current) {
    fillDetail(await api('GET', `/api/keys/${current}`));
    await loadUsage();
  }
}

function showApp() {
  $('login').hidden = true;
  $('app').hidden = false;
  $('logout').hidden = false;
}

function showLogin() {
  csrf = '';
  current = null;
  if (timer) clearInterval(timer);
  clearOnce();
  $('app').hidden = true;
  $('logout').hidden = true;
  $('login').hidden = false;
}

async function start() {
  const s = await api('GET', '/api/session');
  if (!s.loggedIn) return showLogin();
  csrf = s.csrf;
  showApp();
  await loadPlans();
  await loadKeys();
}

const act = (fn) => (ev) => {
  if (ev) ev.preventDefault();
  showError(null);
  fn().catch((err) => {
    if (err.status === 401) showLogin();
    else showError(err);
  });
};

$('login-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  showError(null, 'login-error');
  const token = $('token').value;
  $('token').value = '';
  api('POST', '/api/login', { token })
    .then((r) => {
      csrf = r.csrf;
      return start();
    })
    .catch((err) => showError(err, 'login-error'));
});

$('logout').addEventListener(
  'click',
  act(async () => {
    await api('POST', '/api/logout');
    showLogin();
  }),
);

$('create-form').addEventListener(
  'submit',
  act(async () => {
    const networks = list($('create-networks').value);
    const limits = {
      creditsPerDay: numOrNull($('create-cpd').value),
      creditsPerSecond: numOrNull($('create-cps').value),
    };
    const r = await api('POST', '/api/keys', {
      name: $('create-name').value,
      plan: $('create-plan').value,
      networks: networks.length > 0 ? networks : null,
      limits,
    });
    $('create-form').reset();
    showOnce(`Your new API key "${r.view.name}"`, r.key);
    await loadKeys();
    await openKey(r.view.id);
  }),
);

$('once-copy').addEventListener('click', () => {
  navigator.clipboard?.writeText($('once-value').textContent).catch(() => {});
});
$('once-done').addEventListener('click', clearOnce);

$('settings-form').addEventListener(
  'submit',
  act(async () => {
    const networks = list($('s-networks').value);
    const allowlists = {};
    for (const t of ['addresses', 'origins', 'userAgents', 'methods']) allowlists[t] = lines($(`al-${t}`).value);
    await api('PATCH', `/api/keys/${current}`, {
      name: $('s-name').value,
      networks: networks.length > 0 ? networks : null,
      limits: { creditsPerDay: numOrNull($('s-cpd').value), creditsPerSecond: numOrNull($('s-cps').value) },
      allowlists,
    });
    await refreshAll();
  }),
);

$('secret-create').addEventListener(
  'click',
  act(async () => {
    const r = await api('POST', `/api/keys/${current}/secret`);
    showOnce('Your new API key secret', r.secret);
    await refreshAll();
  }),
);
$('secret-delete').addEventListener(
  'click',
  act(async () => {
    await api('DELETE', `/api/keys/${current}/secret`);
    await refreshAll();
  }),
);
$('secret-required').addEventListener(
  'change',
  act(async () => {
    await api('PATCH', `/api/keys/${current}`, { secretRequired: $('secret-required').checked });
    await refreshAll();
  }),
);
$('rotate').addEventListener(
  'click',
  act(async () => {
    if (!window.confirm('Rotate this key? The current key value stops working within a second.')) return;
    const r = await api('POST', `/api/keys/${current}/rotate`);
    showOnce(`The new value of "${r.view.name}"`, r.key);
    await refreshAll();
  }),
);
$('revoke').addEventListener(
  'click',
  act(async () => {
    if (!window.confirm('Revoke this key? Every request with it will be refused (401).')) return;
    await api('POST', `/api/keys/${current}/revoke`);
    await refreshAll();
  }),
);

start().catch((err) => showError(err));
