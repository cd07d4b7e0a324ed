'use strict';
// The UI's only script (served from the UI itself; the Content-Security-Policy
// allows no other): asks before a destructive form is sent, and keeps the
// overview live. Everything from the server is put on the page as text
// (textContent), never as markup.
(function () {
  document.addEventListener('submit', function (event) {
    const form = event.target;
    const question = form.getAttribute('data-confirm');
    if (question && !window.confirm(question)) event.preventDefault();
  });

  if (document.body.getAttribute('data-screen') !== '/') return;

  const SVG = 'http://www.w3.org/2000/svg';
  const COLORS = { enqueued: '#6b7c93', completed: '#2e7d32', failed: '#c62828', retried: '#ef6c00', oldestAge: '#1565c0' };

  function el(name, attrs, text) {
    const node = document.createElementNS(SVG, name);
    for (const k in attrs) node.setAttribute(k, attrs[k]);
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function niceMax(v) {
    if (!(v > 0)) return 1;
    const p = Math.pow(10, Math.floor(Math.log10(v)));
    for (const m of [1, 2, 5, 10]) if (v <= m * p) return m * p;
    return 10 * p;
  }

  function drawChart(container, series, names) {
    const W = 560, H = 180, L = 44, R = 8, T = 8, B = 22;
    const svg = el('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart-svg', role: 'img' });
    let max = 0;
    for (const p of series) for (const n of names) if (p[n] !== null && p[n] > max) max = p[n];
    max = niceMax(max);
    const t0 = series.length ? series[0].at : 0;
    const t1 = series.length ? series[series.length - 1].at : 1;
    const x = (t) => L + (t1 > t0 ? ((t - t0) / (t1 - t0)) * (W - L - R) : 0);
    const y = (v) => T + (1 - v / max) * (H - T - B);
    for (const f of [0, 0.5, 1]) {
      svg.appendChild(el('line', { x1: L, x2: W - R, y1: y(max * f), y2: y(max * f), class: 'grid' }));
      svg.appendChild(el('text', { x: L - 4, y: y(max * f) + 4, 'text-anchor': 'end', class: 'axis' }, String(+(max * f).toPrecision(3))));
    }
    if (series.length < 2) {
      svg.appendChild(el('text', { x: W / 2, y: H / 2, 'text-anchor': 'middle', class: 'axis' }, 'collecting samples…'));
    } else {
      const seconds = Math.round((t1 - t0) / 1000);
      svg.appendChild(el('text', { x: L, y: H - 6, class: 'axis' }, seconds >= 120 ? `${Math.round(seconds / 60)} min ago` : `${seconds} s ago`));
      svg.appendChild(el('text', { x: W - R, y: H - 6, 'text-anchor': 'end', class: 'axis' }, 'now'));
      let lx = L + 60;
      for (const n of names) {
        let d = '';
        let pen = 'M';
        for (const p of series) {
          if (p[n] === null) { pen = 'M'; continue; }
          d += `${pen}${x(p.at).toFixed(1)},${y(p[n]).toFixed(1)} `;
          pen = 'L';
        }
        svg.appendChild(el('path', { d: d, fill: 'none', stroke: COLORS[n] || '#333', 'stroke-width': 1.8 }));
        if (names.length > 1) {
          svg.appendChild(el('rect', { x: lx, y: H - 15, width: 10, height: 10, fill: COLORS[n] || '#333' }));
          svg.appendChild(el('text', { x: lx + 14, y: H - 6, class: 'axis' }, n));
          lx += 90;
        }
      }
    }
    container.replaceChildren(svg);
  }

  function cell(tag, text, cls) {
    const c = document.createElement(tag);
    c.textContent = text;
    if (cls) c.className = cls;
    return c;
  }

  function drawCounts(d) {
    for (const s of d.states) {
      const tile = document.querySelector(`[data-total="${s}"]`);
      if (tile) tile.textContent = String(d.totals[s]);
    }
    const table = document.getElementById('counts');
    if (!table) return;
    const body = document.createElement('tbody');
    for (const q of d.queues) {
      const tr = document.createElement('tr');
      tr.setAttribute('data-queue', q.queue);
      const name = document.createElement('td');
      const a = document.createElement('a');
      a.href = '/jobs?queue=' + encodeURIComponent(q.queue);
      a.textContent = q.queue;
      name.appendChild(a);
      if (q.paused) { name.appendChild(document.createTextNode(' ')); name.appendChild(cell('span', 'paused', 'badge paused')); }
      tr.appendChild(name);
      for (const s of d.states) {
        const td = cell('td', String(q[s]), 'num');
        td.setAttribute('data-state', s);
        tr.appendChild(td);
      }
      body.appendChild(tr);
    }
    table.replaceChild(body, table.tBodies[0]);
    const foot = table.tFoot;
    if (foot) for (const s of d.states) {
      const td = foot.querySelector(`[data-state="${s}"]`);
      if (td) td.textContent = String(d.totals[s]);
    }
  }

  async function refresh() {
    try {
      const r = await fetch('/api/overview', { credentials: 'same-origin' });
      if (!r.ok) throw new Error(`HTTP ${r.status}`);
      const d = await r.json();
      drawCounts(d);
      drawChart(document.getElementById('throughput-chart'), d.series, ['enqueued', 'completed', 'failed', 'retried']);
      drawChart(document.getElementById('latency-chart'), d.series, ['oldestAge']);
      const stamp = document.getElementById('refreshed');
      if (stamp) {
        stamp.textContent = 'Last refresh ' + new Date().toISOString().slice(11, 19) + 'Z' + (d.sampleError ? ' (sampler: ' + d.sampleError + ')' : '');
        stamp.setAttribute('data-refreshes', String(Number(stamp.getAttribute('data-refreshes') || 0) + 1));
      }
    } catch (err) {
      const stamp = document.getElementById('refreshed');
      if (stamp) stamp.textContent = 'Refresh failed: ' + err.message;
    }
  }

  refresh();
  setInterval(refresh, 2000);
})();
