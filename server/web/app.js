// dpstat dashboard: plain JavaScript over the server's JSON API. Every value
// from the server is inserted as text, never as markup.
'use strict';

(function () {
  const $ = (id) => document.getElementById(id);
  const TOKEN_KEY = 'dpstat.token';
  let me = null;
  let previewed = '';

  function token() { return sessionStorage.getItem(TOKEN_KEY) || ''; }

  async function api(method, path, body) {
    const opts = { method, headers: { 'Authorization': 'Bearer ' + token() } };
    if (body !== undefined) {
      opts.headers['Content-Type'] = 'application/json';
      opts.body = JSON.stringify(body);
    }
    const resp = await fetch(path, opts);
    let data = null;
    try { data = await resp.json(); } catch (e) { data = null; }
    if (!resp.ok) {
      const err = new Error(data && data.error ? data.error.message : ('HTTP ' + resp.status));
      err.code = data && data.error ? data.error.code : '';
      err.status = resp.status;
      throw err;
    }
    return data;
  }

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === 'class') e.className = v; else e.setAttribute(k, v);
    }
    for (const c of children) {
      if (c === null || c === undefined) continue;
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }

  function fmt(x) {
    if (x === null || x === undefined) return '';
    if (typeof x !== 'number') return String(x);
    if (Number.isInteger(x)) return x.toLocaleString('en-US');
    const a = Math.abs(x);
    if (a !== 0 && (a < 1e-3 || a >= 1e9)) return x.toExponential(3);
    return x.toLocaleString('en-US', { maximumFractionDigits: 3 });
  }

  function fillTable(table, head, rows) {
    table.replaceChildren();
    const thead = el('thead', {}, el('tr', {}, ...head.map((h) => el('th', {}, h))));
    const tbody = el('tbody');
    for (const r of rows) tbody.append(el('tr', {}, ...r));
    table.append(thead, tbody);
  }

  // ---- sign in ----
  async function signIn(tok) {
    sessionStorage.setItem(TOKEN_KEY, tok);
    try {
      me = await api('GET', '/v1/me');
    } catch (e) {
      sessionStorage.removeItem(TOKEN_KEY);
      $('signin-error').textContent = e.message;
      return;
    }
    $('signin').hidden = true;
    $('app').hidden = false;
    $('who').hidden = false;
    $('signout').hidden = false;
    $('who').textContent = me.name + (me.role === 'admin' ? ' (admin)' : '');
    $('admin').hidden = me.role !== 'admin';
    await Promise.all([loadTables(), loadBudget(), loadHistory(), me.role === 'admin' ? loadAdmin() : null]);
  }

  $('signin-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    $('signin-error').textContent = '';
    const tok = $('token').value.trim();
    $('token').value = '';
    if (tok) signIn(tok);
  });

  $('signout').addEventListener('click', () => {
    sessionStorage.removeItem(TOKEN_KEY);
    location.reload();
  });

  // ---- tables ----
  function decl(c) {
    // Dates and timestamps come with their bounds spelt as such in range.
    if (c.range && c.range.length === 2) return ' in [' + c.range[0] + ', ' + c.range[1] + ']';
    if (c.lower !== undefined || c.upper !== undefined) return ' in [' + fmt(c.lower) + ', ' + fmt(c.upper) + ']';
    if (c.values && c.values.length) {
      const v = c.values.length > 6 ? c.values.slice(0, 6).join(', ') + ', …' : c.values.join(', ');
      return ' ∈ {' + v + '}';
    }
    return '';
  }

  async function loadTables() {
    const data = await api('GET', '/v1/tables');
    const ul = $('tables');
    ul.replaceChildren();
    const private_ = data.tables.filter((t) => !t.public);
    if (!private_.length) ul.append(el('li', { class: 'decl' }, 'No table granted yet.'));
    // The query box starts from a table this analyst may query, unless
    // the analyst has typed something already.
    const box = $('sql');
    if (private_.length && !box.dataset.edited && !private_.some((t) => box.value.includes(' ' + t.name))) {
      box.value = 'SELECT COUNT(*) FROM ' + private_[0].name;
      invalidatePreview();
    }
    for (const t of data.tables) {
      const cols = el('ul', {}, ...t.columns.map((c) =>
        el('li', {}, el('code', {}, c.name), ' ', el('span', { class: 'decl' }, c.type + decl(c) + (c.nullable ? ', nullable' : '')))));
      const unit = t.public
        ? 'public · join it to a private table'
        : t.privacy_unit
          ? 'privacy unit ' + t.privacy_unit + ' · ≤' + t.max_groups_per_unit + ' groups, ≤' + t.max_rows_per_group + ' rows/group'
          : 'one row per person';
      const name = el('span', { class: 'tname' + (t.public ? ' public' : ''), title: t.public ? 'A public table: join it in the query' : 'Use in the query' }, t.name);
      if (!t.public) {
        name.addEventListener('click', () => {
          $('sql').value = 'SELECT COUNT(*) FROM ' + t.name;
          invalidatePreview();
        });
      }
      ul.append(el('li', {}, name, ' ', el('span', { class: 'unit' }, unit), cols));
    }
  }

  // ---- budget ----
  async function loadBudget() {
    const data = await api('GET', '/v1/budget');
    const box = $('budgets');
    box.replaceChildren();
    if (!data.budgets.length) box.append(el('p', { class: 'decl' }, 'No budget granted.'));
    for (const b of data.budgets) {
      const frac = b.limit.epsilon > 0 ? Math.min(1, b.spent.epsilon / b.limit.epsilon) : 1;
      const fill = el('div', { class: 'fill' + (frac > 0.9 ? ' bad' : frac > 0.6 ? ' warn' : '') });
      fill.style.width = (frac * 100).toFixed(1) + '%';
      box.append(el('div', { class: 'gauge' },
        el('div', { class: 'label' }, el('strong', {}, b.table), el('span', {}, 'ε ' + fmt(b.spent.epsilon) + ' / ' + fmt(b.limit.epsilon))),
        el('div', { class: 'bar', role: 'meter', 'aria-valuemin': '0', 'aria-valuemax': String(b.limit.epsilon), 'aria-valuenow': String(b.spent.epsilon) }, fill),
        el('div', { class: 'sub' }, 'remaining ε ' + fmt(b.remaining.epsilon) + ', δ ' + fmt(b.remaining.delta) + ' · ' + b.releases + ' releases'),
        b.total ? el('div', { class: 'sub total' }, totalText(b.total)) : '',
        b.epochs && b.epochs.length ? epochStrip(b) : ''));
    }
  }

  // epochStrip draws one small gauge per run of charged epochs: on a table
  // that declares epochs each epoch has a budget of its own.
  function epochStrip(b) {
    const strip = el('div', { class: 'strip', title: 'each epoch has a budget of ε ' + fmt(b.limit.epsilon) + '; epochs not shown are unspent' });
    for (const e of b.epochs) {
      const frac = b.limit.epsilon > 0 ? Math.min(1, e.spent.epsilon / b.limit.epsilon) : 1;
      const fill = el('div', { class: 'fill' + (frac > 0.9 ? ' bad' : frac > 0.6 ? ' warn' : '') });
      fill.style.height = (frac * 100).toFixed(1) + '%';
      strip.append(el('div', { class: 'cell', role: 'meter', 'aria-label': e.epochs, 'aria-valuemin': '0',
        'aria-valuemax': String(b.limit.epsilon), 'aria-valuenow': String(e.spent.epsilon),
        title: e.epochs + ': ε ' + fmt(e.spent.epsilon) + ' / ' + fmt(b.limit.epsilon) + ' · ' + e.releases + ' releases' }, fill));
    }
    return el('div', { class: 'sub epochs' }, 'per epoch (' + b.epochs.length + ' charged runs):', strip);
  }

  // totalText describes a table's total budget, every analyst together.
  function totalText(t) {
    return 'all analysts together: ε ' + fmt(t.spent.epsilon) + ' / ' + fmt(t.limit.epsilon) +
      ', remaining ε ' + fmt(t.remaining.epsilon) + ', δ ' + fmt(t.remaining.delta) + ' · ' + t.releases + ' releases';
  }

  // ---- history ----
  function releaseRows(rels, withAnalyst) {
    return rels.map((r) => [
      el('td', {}, new Date(r.time).toLocaleString()),
      ...(withAnalyst ? [el('td', {}, r.analyst)] : []),
      el('td', {}, r.table),
      el('td', { class: 'num' }, fmt(r.cost.epsilon)),
      el('td', { class: 'num' }, fmt(r.cost.delta)),
      el('td', { class: 'sql' }, r.description),
    ]);
  }

  async function loadHistory() {
    const data = await api('GET', '/v1/history?limit=50');
    fillTable($('history'), ['time', 'table', 'ε', 'δ', 'query'], releaseRows(data.releases, false));
  }

  // ---- query ----
  function params(dry) {
    const body = { sql: $('sql').value, dry_run: dry };
    for (const k of ['epsilon', 'delta', 'confidence']) {
      const v = $(k).value.trim();
      if (v !== '') body[k] = Number(v);
    }
    return body;
  }

  function invalidatePreview() {
    previewed = '';
    $('run').disabled = true;
    $('preview-box').hidden = true;
  }
  for (const id of ['sql', 'epsilon', 'delta', 'confidence']) $(id).addEventListener('input', invalidatePreview);
  $('sql').addEventListener('input', () => { $('sql').dataset.edited = '1'; });

  $('preview').addEventListener('click', async () => {
    $('query-error').textContent = '';
    const body = params(true);
    try {
      const r = await api('POST', '/v1/query', body);
      const widths = [];
      const dependent = r.data_dependent || [];
      (r.ci[0] || []).forEach((ci, j) => {
        if (!ci) return;
        const name = r.columns[j];
        widths.push(dependent.includes(name) ? name + ' at most ±' + fmt(ci[1]) + ' (depends on the data; usually far narrower)' : name + ' ±' + fmt(ci[1]));
      });
      $('preview-box').textContent = 'This query costs ε = ' + fmt(r.cost.epsilon) + ', δ = ' + fmt(r.cost.delta) +
        ' on ' + r.table + ' (remaining now ε = ' + fmt(r.budget.remaining.epsilon) + ', after ε = ' +
        fmt(Math.max(0, r.budget.remaining.epsilon - r.cost.epsilon)) + '). Expected ' +
        Math.round((body.confidence || 0.95) * 100) + '% interval half-widths: ' + (widths.join(', ') || 'n/a') +
        '. ' + r.rows.length + ' group(s). Nothing was charged.';
      $('preview-box').hidden = false;
      previewed = JSON.stringify(params(false));
      $('run').disabled = false;
    } catch (e) {
      $('query-error').textContent = e.message;
    }
  });

  $('run').addEventListener('click', async () => {
    $('query-error').textContent = '';
    const body = params(false);
    if (JSON.stringify(body) !== previewed) { invalidatePreview(); return; }
    $('run').disabled = true;
    try {
      const r = await api('POST', '/v1/query', body);
      showResult(r);
      await Promise.all([loadBudget(), loadHistory(), me.role === 'admin' ? loadAdmin() : null]);
    } catch (e) {
      $('query-error').textContent = e.message;
    } finally {
      invalidatePreview();
    }
  });

  function showResult(r) {
    $('result').hidden = false;
    $('result-meta').textContent = 'Cost ε = ' + fmt(r.cost.epsilon) + ', δ = ' + fmt(r.cost.delta) + ' on ' + r.table +
      ' · budget left ε = ' + fmt(r.budget.remaining.epsilon) + ', δ = ' + fmt(r.budget.remaining.delta) +
      (r.budget.total ? ' (' + 'all analysts together: ε = ' + fmt(r.budget.total.remaining.epsilon) + ' left)' : '') +
      ' · intervals at ' + Math.round(Number($('confidence').value || 0.95) * 100) + '%' +
      (r.repeated ? ' · asked before: the stored answer, nothing charged now' : '');
    const rows = r.rows.map((row, i) => row.map((v, j) => {
      const ci = r.ci[i] && r.ci[i][j];
      if (!ci) return el('td', {}, fmt(v));
      return el('td', { class: 'num' }, fmt(v), el('br'), el('span', { class: 'pm' }, '[' + fmt(ci[0]) + ', ' + fmt(ci[1]) + ']'));
    }));
    fillTable($('result-table'), r.columns, rows);
    drawChart(r);
    $('notes').replaceChildren(...(r.notes || []).map((n) => el('li', {}, n)));
  }

  // drawChart draws each noisy column as its own bar chart with error
  // bars (each on its own scale: a count and an average do not share one).
  function drawChart(r) {
    const box = $('chart');
    box.replaceChildren();
    if (!r.rows.length) return;
    const noisy = r.columns.map((_, j) => j).filter((j) => r.ci.some((row) => row[j]));
    const keys = r.columns.map((_, j) => j).filter((j) => !noisy.includes(j));
    for (const col of noisy) box.append(chartOf(r, col, keys));
  }

  // chartOf is the SVG bar chart of column col, labelled by the key columns.
  function chartOf(r, col, keys) {
    const data = r.rows.filter((_, i) => r.ci[i] && r.ci[i][col]).map((row) => {
      const i = r.rows.indexOf(row);
      return {
        label: keys.map((j) => String(row[j])).join(' / ') || r.columns[col],
        v: Number(row[col]), lo: r.ci[i][col][0], hi: r.ci[i][col][1],
      };
    });
    const NS = 'http://www.w3.org/2000/svg';
    const W = 520, H = 300, ml = 60, mr = 10, mt = 24, mb = 60;
    const lo0 = Math.min(0, ...data.map((d) => d.lo)), hi0 = Math.max(0, ...data.map((d) => d.hi));
    const raw = (hi0 - lo0 || 1) / 4, mag = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw);
    const min = Math.floor(lo0 / step) * step, max = Math.ceil(hi0 / step) * step;
    const span = max - min || 1;
    const y = (v) => mt + (H - mt - mb) * (1 - (v - min) / span);
    const svg = document.createElementNS(NS, 'svg');
    svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
    svg.setAttribute('role', 'img');
    svg.setAttribute('aria-label', 'Bar chart of ' + r.columns[col] + ' with error bars');
    const add = (tag, attrs, text) => {
      const e = document.createElementNS(NS, tag);
      for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
      if (text !== undefined) e.textContent = text;
      svg.append(e);
      return e;
    };
    add('text', { x: ml, y: 14 }, r.columns[col] + ' (bars: noisy values; whiskers: intervals)');
    for (let v = min; v <= max + step / 2; v += step) {
      add('line', { x1: ml - 4, x2: W - mr, y1: y(v), y2: y(v), class: 'axis', opacity: Math.abs(v) < step / 2 ? 1 : 0.3 });
      add('text', { x: ml - 6, y: y(v) + 4, 'text-anchor': 'end' }, fmt(Math.round(v * 1e6) / 1e6));
    }
    const bw = (W - ml - mr) / data.length;
    data.forEach((d, i) => {
      const x = ml + i * bw;
      const top = y(Math.max(0, d.v)), bot = y(Math.min(0, d.v));
      add('rect', { x: x + bw * 0.15, y: top, width: bw * 0.7, height: Math.max(1, bot - top), class: 'barrect' });
      const cx = x + bw / 2;
      add('line', { x1: cx, x2: cx, y1: y(d.hi), y2: y(d.lo), class: 'err' });
      add('line', { x1: cx - bw * 0.12, x2: cx + bw * 0.12, y1: y(d.hi), y2: y(d.hi), class: 'err' });
      add('line', { x1: cx - bw * 0.12, x2: cx + bw * 0.12, y1: y(d.lo), y2: y(d.lo), class: 'err' });
      const lbl = d.label.length > 14 ? d.label.slice(0, 13) + '…' : d.label;
      add('text', { x: cx, y: H - mb + 16, 'text-anchor': 'middle', transform: data.length > 6 ? 'rotate(30 ' + cx + ' ' + (H - mb + 16) + ')' : '' }, lbl);
    });
    return svg;
  }

  // ---- admin ----
  async function loadAdmin() {
    const [a, rel] = await Promise.all([api('GET', '/v1/admin/analysts'), api('GET', '/v1/admin/releases?limit=100')]);
    const rows = a.analysts.map((x) => {
      const btn = el('button', { class: 'danger', type: 'button' }, 'Revoke');
      btn.disabled = x.revoked;
      btn.addEventListener('click', async () => {
        if (!confirm('Revoke the token of ' + x.name + '?')) return;
        try { await api('POST', '/v1/admin/analysts/' + encodeURIComponent(x.name) + '/revoke'); await loadAdmin(); }
        catch (e) { $('admin-error').textContent = e.message; }
      });
      const budgets = x.budgets.map((b) => b.table + ': ε ' + fmt(b.spent.epsilon) + '/' + fmt(b.limit.epsilon) +
        (b.total ? ' (all: ' + fmt(b.total.spent.epsilon) + '/' + fmt(b.total.limit.epsilon) + ')' : '')).join('; ');
      return [
        el('td', {}, x.name),
        el('td', {}, el('span', { class: 'badge' + (x.role === 'admin' ? ' admin' : '') }, x.role)),
        el('td', {}, x.revoked ? el('span', { class: 'badge revoked' }, 'revoked') : 'active'),
        el('td', {}, budgets || '—'),
        el('td', {}, btn),
      ];
    });
    fillTable($('analysts'), ['name', 'role', 'status', 'budgets (spent/limit)', ''], rows);
    fillTable($('releases'), ['time', 'analyst', 'table', 'ε', 'δ', 'query'], releaseRows(rel.releases, true));
  }

  function num(id) { const v = $(id).value.trim(); return v === '' ? undefined : Number(v); }

  $('add-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    $('admin-error').textContent = '';
    $('admin-msg').replaceChildren();
    const body = { name: $('add-name').value.trim(), role: $('add-role').value, grants: [] };
    if ($('add-table').value.trim()) body.grants.push({ table: $('add-table').value.trim(), epsilon: num('add-eps') || 0, delta: num('add-delta') || 0 });
    try {
      const r = await api('POST', '/v1/admin/analysts', body);
      $('admin-msg').append('Token for ' + r.analyst.name + ' (shown only now; copy it): ', el('div', { class: 'token-once' }, r.token));
      $('add-form').reset();
      await loadAdmin();
    } catch (e) { $('admin-error').textContent = e.message; }
  });

  $('grant-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    $('admin-error').textContent = '';
    try {
      const total = $('grant-total').checked;
      const body = { table: $('grant-table').value.trim(), epsilon: num('grant-eps') || 0, delta: num('grant-delta') || 0 };
      if (total) body.total = true; else body.analyst = $('grant-name').value.trim();
      const b = await api('POST', '/v1/admin/grants', body);
      $('admin-msg').textContent = 'Granted ' + (total ? 'all analysts together' : b.analyst) + ' on ' + b.table + ': ε ' + fmt(b.limit.epsilon) + ', δ ' + fmt(b.limit.delta);
      await Promise.all([loadAdmin(), loadBudget(), loadTables()]);
    } catch (e) { $('admin-error').textContent = e.message; }
  });

  if (token()) signIn(token());
})();
