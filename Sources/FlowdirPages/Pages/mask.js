/* flowdir serve: mask.js. The mask editor for `draw_mask` questions.
 * FD.MaskEditor(host, {imageUrl}) builds it in `host` and returns
 * {fit(), ready(), exportPNG() -> Promise<{blob, empty, width, height}>, destroy()}.
 * The mask is a canvas at the image's natural size, shown over it as a
 * translucent tint; the export is a PNG of exactly that size, white (255)
 * where painted on black (0), soft edges grey.
 * Input: pointer events (mouse, pen, touch); two fingers pinch-zoom and pan;
 * wheel zooms; Pan tool, space+drag or the middle button pan.
 * Keys: B brush, E eraser, F feather, H pan, Ctrl+Z undo, Ctrl+Shift+Z / Ctrl+Y redo,
 * + / - zoom, 0 fit, [ / ] brush size. */
(function () {
  'use strict';
  const FD = window.FD = window.FD || {};
  const TINT = [255, 0, 90];
  const TOOLS = [['brush', 'Brush', 'B'], ['eraser', 'Eraser', 'E'], ['feather', 'Feather', 'F'], ['pan', 'Pan', 'H']];

  FD.MaskEditor = function (host, opts) {
    const el = document.createElement('div');
    el.className = 'mask-editor';
    el.innerHTML =
      '<div class="mask-tools" role="group" aria-label="Mask tools">' +
      TOOLS.map(([id, name, key]) => '<button type="button" class="btn small" data-tool="' + id + '" data-testid="mask-tool-' + id +
        '" aria-pressed="false" aria-keyshortcuts="' + key + '" title="' + name + ' (' + key + ')">' + name + '</button>').join('') +
      '<span class="sep" aria-hidden="true"></span>' +
      '<label>Size <input type="range" min="1" max="200" value="20" data-testid="mask-size" aria-label="Brush size in image pixels"></label>' +
      '<label>Softness <input type="range" min="0" max="100" value="0" data-testid="mask-softness" aria-label="Edge softness (feather), percent"></label>' +
      '<span class="sep" aria-hidden="true"></span>' +
      btn('undo', 'Undo', 'Control+Z') + btn('redo', 'Redo', 'Control+Shift+Z') + btn('reset', 'Reset') +
      '<span class="sep" aria-hidden="true"></span>' +
      btn('zoom-out', '−', '-', 'Zoom out') + btn('zoom-in', '+', '+', 'Zoom in') + btn('zoom-fit', 'Fit', '0', 'Zoom to fit') +
      '</div>' +
      '<div class="mask-viewport" data-testid="mask-viewport" tabindex="0" aria-label="Mask drawing area: drag to paint; B brush, E eraser, F feather, H or Space pan; plus and minus zoom">' +
      '<div class="mask-stage"><img alt="The image to mask"><canvas data-testid="mask-canvas" aria-label="Mask (painted areas are masked)"></canvas></div></div>' +
      '<div class="mask-status" data-testid="mask-status" aria-live="polite">Loading image…</div>';
    host.appendChild(el);
    const q = (s) => el.querySelector(s);
    const vp = q('.mask-viewport'), stage = q('.mask-stage'), img = q('img'), canvas = q('canvas'), status = q('.mask-status');
    const sizeIn = q('[data-testid="mask-size"]'), softIn = q('[data-testid="mask-softness"]');
    const ctx = canvas.getContext('2d', { willReadFrequently: true });
    const before = document.createElement('canvas'), bctx = before.getContext('2d', { willReadFrequently: true });
    let W = 0, H = 0, loaded = false, tool = 'brush', spaceDown = false, fitted = true;
    let scale = 1, tx = 0, ty = 0;
    const undo = [], redo = [];
    const pointers = new Map();
    let gesture = null; // {kind: 'stroke'|'pan'|'pinch', ...}

    function btn(id, text, key, label) {
      return '<button type="button" class="btn small" data-cmd="' + id + '" data-testid="mask-' + id + '"' + (key ? ' aria-keyshortcuts="' + key + '"' : '') +
        (label ? ' aria-label="' + label + '"' : '') + ' title="' + (label || text) + (key ? ' (' + key + ')' : '') + '">' + text + '</button>';
    }

    img.onload = () => {
      W = img.naturalWidth; H = img.naturalHeight;
      img.width = W; img.height = H;
      canvas.width = before.width = W; canvas.height = before.height = H;
      canvas.style.width = W + 'px'; canvas.style.height = H + 'px';
      const big = Math.max(W, H);
      sizeIn.max = String(Math.max(50, Math.round(big / 4)));
      sizeIn.value = String(Math.max(4, Math.round(big / 30)));
      loaded = true;
      el.dataset.ready = '1';
      fit();
    };
    img.onerror = () => { status.textContent = 'The image could not be loaded.'; FD.showError && FD.showError({ error: 'The image to mask could not be loaded', hint: 'Close the editor and try again.' }); };
    img.src = opts.imageUrl;

    // ---- view: zoom and pan -------------------------------------------------------------------
    function apply() {
      stage.style.transform = 'translate(' + tx + 'px,' + ty + 'px) scale(' + scale + ')';
      updateStatus();
    }
    function updateStatus() {
      if (!loaded) return;
      status.textContent = TOOLS.find((t) => t[0] === tool)[1] + ' · size ' + sizeIn.value + ' px · softness ' + softIn.value + '% · zoom ' +
        Math.round(scale * 100) + '% · ' + W + '×' + H;
    }
    function fit() {
      if (!loaded || !vp.clientWidth) return;
      scale = Math.min(vp.clientWidth / W, vp.clientHeight / H) * 0.96;
      tx = (vp.clientWidth - W * scale) / 2; ty = (vp.clientHeight - H * scale) / 2;
      fitted = true; apply();
    }
    function zoomAt(factor, cx, cy) {
      const ns = Math.min(32, Math.max(0.02, scale * factor));
      tx = cx - (cx - tx) * (ns / scale); ty = cy - (cy - ty) * (ns / scale);
      scale = ns; fitted = false; apply();
    }
    const center = () => [vp.clientWidth / 2, vp.clientHeight / 2];
    const ro = window.ResizeObserver ? new ResizeObserver(() => { if (fitted) fit(); }) : null;
    if (ro) ro.observe(vp);
    vp.addEventListener('wheel', (e) => {
      e.preventDefault();
      const r = vp.getBoundingClientRect();
      zoomAt(Math.exp(-e.deltaY * (e.ctrlKey ? 0.01 : 0.0015)), e.clientX - r.left, e.clientY - r.top);
    }, { passive: false });

    // ---- painting ---------------------------------------------------------------------------------
    function toImage(e) {
      const r = canvas.getBoundingClientRect();
      return [(e.clientX - r.left) * W / r.width, (e.clientY - r.top) * H / r.height];
    }
    const radius = () => Math.max(0.5, Number(sizeIn.value) / 2);
    const softness = () => Number(softIn.value) / 100;
    function dab(x, y) {
      const r = radius();
      if (tool === 'feather') return featherDab(x, y, r);
      ctx.globalCompositeOperation = tool === 'eraser' ? 'destination-out' : 'source-over';
      const s = softness(), color = 'rgb(' + TINT.join(',') + ')';
      if (s > 0) {
        const g = ctx.createRadialGradient(x, y, r * (1 - s), x, y, r);
        g.addColorStop(0, 'rgba(' + TINT.join(',') + ',1)'); g.addColorStop(1, 'rgba(' + TINT.join(',') + ',0)');
        ctx.fillStyle = g;
      } else ctx.fillStyle = color;
      ctx.beginPath(); ctx.arc(x, y, r, 0, Math.PI * 2); ctx.fill();
      ctx.globalCompositeOperation = 'source-over';
    }
    // Feather: blurs the mask's edge under the brush (a box blur of the alpha, 3 passes).
    function featherDab(x, y, r) {
      const b = Math.max(1, Math.round(r * (0.15 + 0.5 * softness())));
      const x0 = Math.max(0, Math.floor(x - r - b)), y0 = Math.max(0, Math.floor(y - r - b));
      const x1 = Math.min(W, Math.ceil(x + r + b)), y1 = Math.min(H, Math.ceil(y + r + b));
      const w = x1 - x0, h = y1 - y0;
      if (w <= 0 || h <= 0) return;
      const data = ctx.getImageData(x0, y0, w, h), px = data.data;
      let a = new Float32Array(w * h);
      for (let i = 0; i < w * h; i++) a[i] = px[i * 4 + 3];
      for (let pass = 0; pass < 3; pass++) { a = blur1d(a, w, h, b, true); a = blur1d(a, w, h, b, false); }
      for (let j = 0; j < h; j++) for (let i = 0; i < w; i++) {
        const d = Math.hypot(x0 + i + 0.5 - x, y0 + j + 0.5 - y);
        if (d > r) continue;
        const k = (j * w + i), t = Math.min(1, (r - d) / Math.max(1, r * 0.3));
        const v = px[k * 4 + 3] * (1 - t) + a[k] * t;
        px[k * 4] = TINT[0]; px[k * 4 + 1] = TINT[1]; px[k * 4 + 2] = TINT[2]; px[k * 4 + 3] = Math.round(v);
      }
      ctx.putImageData(data, x0, y0);
    }
    function blur1d(src, w, h, r, horizontal) {
      const out = new Float32Array(w * h), n = horizontal ? w : h, m = horizontal ? h : w;
      for (let o = 0; o < m; o++) {
        let sum = 0, count = 0;
        const at = (i) => horizontal ? o * w + i : i * w + o;
        for (let i = -r; i <= r; i++) if (i >= 0 && i < n) { sum += src[at(i)]; count++; }
        for (let i = 0; i < n; i++) {
          out[at(i)] = sum / count;
          const add = i + r + 1, sub = i - r;
          if (add < n) { sum += src[at(add)]; count++; }
          if (sub >= 0) { sum -= src[at(sub)]; count--; }
        }
      }
      return out;
    }
    function strokeTo(x, y) {
      const g = gesture, r = radius();
      const step = tool === 'feather' ? Math.max(1, r * 0.5) : Math.max(0.5, r * 0.25);
      const dx = x - g.x, dy = y - g.y, dist = Math.hypot(dx, dy);
      let t = g.carry;
      while (t <= dist) { const k = dist ? t / dist : 0; dab(g.x + dx * k, g.y + dy * k); t += step; }
      g.carry = t - dist; g.x = x; g.y = y;
      grow(g, x, y, r + 2);
    }
    function grow(g, x, y, r) {
      g.box = [Math.min(g.box[0], x - r), Math.min(g.box[1], y - r), Math.max(g.box[2], x + r), Math.max(g.box[3], y + r)];
    }
    function beginStroke(e) {
      const [x, y] = toImage(e);
      bctx.clearRect(0, 0, W, H); bctx.drawImage(canvas, 0, 0);
      gesture = { kind: 'stroke', id: e.pointerId, x, y, carry: 0, box: [x, y, x, y] };
      dab(x, y); grow(gesture, x, y, radius() + 2);
      el.dataset.drawing = '1';
    }
    function endStroke(commit) {
      const g = gesture; gesture = null; delete el.dataset.drawing;
      if (!g || g.kind !== 'stroke') return;
      const x0 = Math.max(0, Math.floor(g.box[0])), y0 = Math.max(0, Math.floor(g.box[1]));
      const x1 = Math.min(W, Math.ceil(g.box[2])), y1 = Math.min(H, Math.ceil(g.box[3]));
      if (x1 <= x0 || y1 <= y0) return;
      const old = bctx.getImageData(x0, y0, x1 - x0, y1 - y0);
      if (!commit) { ctx.putImageData(old, x0, y0); return; }
      record({ x: x0, y: y0, before: old, after: ctx.getImageData(x0, y0, x1 - x0, y1 - y0) });
    }
    function record(op) { undo.push(op); if (undo.length > 40) undo.shift(); redo.length = 0; syncButtons(); }
    function step(from, to, key) {
      const op = from.pop();
      if (!op) return;
      ctx.putImageData(op[key], op.x, op.y);
      to.push(op); syncButtons();
    }
    function reset() {
      if (!loaded) return;
      const all = ctx.getImageData(0, 0, W, H);
      ctx.clearRect(0, 0, W, H);
      record({ x: 0, y: 0, before: all, after: ctx.getImageData(0, 0, W, H) });
    }
    function syncButtons() {
      q('[data-cmd="undo"]').disabled = !undo.length;
      q('[data-cmd="redo"]').disabled = !redo.length;
    }

    // ---- pointers: paint, pan, pinch ------------------------------------------------------------------
    function panning(e) { return tool === 'pan' || spaceDown || e.button === 1; }
    vp.addEventListener('pointerdown', (e) => {
      if (!loaded || (e.button !== 0 && e.button !== 1 && e.pointerType === 'mouse')) return;
      e.preventDefault();
      vp.setPointerCapture(e.pointerId);
      pointers.set(e.pointerId, { x: e.clientX, y: e.clientY });
      if (pointers.size === 2) {
        if (gesture && gesture.kind === 'stroke') endStroke(false);
        const [a, b] = Array.from(pointers.values());
        gesture = { kind: 'pinch', d: Math.hypot(a.x - b.x, a.y - b.y) || 1, mx: (a.x + b.x) / 2, my: (a.y + b.y) / 2, s: scale, tx, ty };
      } else if (pointers.size === 1) {
        if (panning(e)) { gesture = { kind: 'pan', x: e.clientX, y: e.clientY, tx, ty }; vp.classList.add('panning'); } else beginStroke(e);
      }
    });
    vp.addEventListener('pointermove', (e) => {
      if (!pointers.has(e.pointerId)) return;
      pointers.set(e.pointerId, { x: e.clientX, y: e.clientY });
      const g = gesture;
      if (!g) return;
      if (g.kind === 'stroke' && e.pointerId === g.id) {
        const evs = e.getCoalescedEvents ? e.getCoalescedEvents() : [];
        for (const c of (evs.length ? evs : [e])) { const [x, y] = toImage(c); strokeTo(x, y); }
      } else if (g.kind === 'pan') {
        tx = g.tx + e.clientX - g.x; ty = g.ty + e.clientY - g.y; fitted = false; apply();
      } else if (g.kind === 'pinch' && pointers.size >= 2) {
        const [a, b] = Array.from(pointers.values()), r = vp.getBoundingClientRect();
        const ns = Math.min(32, Math.max(0.02, g.s * (Math.hypot(a.x - b.x, a.y - b.y) / g.d)));
        const mx = (a.x + b.x) / 2, my = (a.y + b.y) / 2, cx = g.mx - r.left, cy = g.my - r.top;
        scale = ns; tx = cx - (cx - g.tx) * (ns / g.s) + (mx - g.mx); ty = cy - (cy - g.ty) * (ns / g.s) + (my - g.my);
        fitted = false; apply();
      }
    });
    function up(e) {
      if (!pointers.has(e.pointerId)) return;
      pointers.delete(e.pointerId);
      if (gesture && gesture.kind === 'stroke') endStroke(e.type !== 'pointercancel');
      else if (gesture && gesture.kind === 'pinch' && pointers.size) gesture = { kind: 'none' };
      if (!pointers.size) { gesture = null; vp.classList.remove('panning'); }
    }
    vp.addEventListener('pointerup', up);
    vp.addEventListener('pointercancel', up);
    vp.addEventListener('contextmenu', (e) => e.preventDefault());

    // ---- tools, buttons and keys ------------------------------------------------------------------------
    function setTool(t) {
      tool = t;
      for (const b of el.querySelectorAll('[data-tool]')) b.setAttribute('aria-pressed', String(b.dataset.tool === t));
      vp.classList.toggle('panning', t === 'pan');
      el.dataset.tool = t;
      updateStatus();
    }
    const commands = {
      undo: () => step(undo, redo, 'before'), redo: () => step(redo, undo, 'after'), reset,
      'zoom-in': () => zoomAt(1.25, ...center()), 'zoom-out': () => zoomAt(0.8, ...center()), 'zoom-fit': fit,
    };
    el.addEventListener('click', (e) => {
      const b = e.target.closest('button');
      if (!b) return;
      if (b.dataset.tool) setTool(b.dataset.tool);
      else if (commands[b.dataset.cmd]) commands[b.dataset.cmd]();
    });
    sizeIn.addEventListener('input', updateStatus);
    softIn.addEventListener('input', updateStatus);
    const root = host.closest('dialog') || document;
    function onKey(e) {
      const t = e.target, typing = t && (t.tagName === 'INPUT' && t.type !== 'range' || t.tagName === 'TEXTAREA' || t.tagName === 'SELECT');
      if (typing) return;
      const k = e.key.toLowerCase(), mod = e.ctrlKey || e.metaKey;
      if (mod && k === 'z') { e.preventDefault(); commands[e.shiftKey ? 'redo' : 'undo'](); return; }
      if (mod && k === 'y') { e.preventDefault(); commands.redo(); return; }
      if (mod || e.altKey) return;
      if (k === ' ' && (t === vp || t === document.body || t === root)) { e.preventDefault(); spaceDown = true; vp.classList.add('panning'); return; }
      const tools = { b: 'brush', e: 'eraser', f: 'feather', h: 'pan' };
      if (tools[k]) { e.preventDefault(); setTool(tools[k]); }
      else if (k === '+' || k === '=') { e.preventDefault(); commands['zoom-in'](); }
      else if (k === '-' || k === '_') { e.preventDefault(); commands['zoom-out'](); }
      else if (k === '0') { e.preventDefault(); fit(); }
      else if (k === '[' || k === ']') {
        e.preventDefault();
        sizeIn.value = String(Math.max(1, Math.round(Number(sizeIn.value) * (k === ']' ? 1.2 : 1 / 1.2)) + (k === ']' ? 1 : 0)));
        updateStatus();
      }
    }
    function onKeyUp(e) { if (e.key === ' ') { spaceDown = false; if (tool !== 'pan') vp.classList.remove('panning'); } }
    root.addEventListener('keydown', onKey);
    root.addEventListener('keyup', onKeyUp);
    setTool('brush');
    syncButtons();

    // ---- export -------------------------------------------------------------------------------------------
    function exportPNG() {
      const out = document.createElement('canvas');
      out.width = W; out.height = H;
      const o = out.getContext('2d', { willReadFrequently: true });
      const white = document.createElement('canvas');
      white.width = W; white.height = H;
      const w = white.getContext('2d');
      w.drawImage(canvas, 0, 0);
      w.globalCompositeOperation = 'source-in';
      w.fillStyle = '#fff'; w.fillRect(0, 0, W, H);
      o.fillStyle = '#000'; o.fillRect(0, 0, W, H);
      o.drawImage(white, 0, 0);
      const px = ctx.getImageData(0, 0, W, H).data;
      let empty = true;
      for (let i = 3; i < px.length; i += 4) if (px[i]) { empty = false; break; }
      return new Promise((resolve) => out.toBlob((blob) => resolve({ blob, empty, width: W, height: H }), 'image/png'));
    }
    return {
      fit, ready: () => loaded, exportPNG,
      destroy() { root.removeEventListener('keydown', onKey); root.removeEventListener('keyup', onKeyUp); if (ro) ro.disconnect(); el.remove(); },
    };
  };
})();