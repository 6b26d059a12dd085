extension UIAssets {
    static let appCSS = ##"""
/* flowdir serve: one stylesheet. Status colours follow the seed's table; state is always also in words. */
:root {
  --bg: #f6f7f9; --surface: #ffffff; --surface-2: #f0f2f5; --text: #1b1f24; --muted: #57606a; --border: #d0d7de;
  --accent: #0b63ce; --accent-text: #ffffff; --focus: #0b63ce;
  --blue: #0b63ce; --blue-fill: rgba(11, 99, 206, .15); --blue-text: #0a4fa3;
  --orange: #c25e00; --orange-fill: rgba(232, 128, 20, .15); --orange-text: #8a4300;
  --green: #1a7f37; --green-fill: rgba(26, 127, 55, .14); --green-text: #116329;
  --red: #cf222e; --red-fill: rgba(207, 34, 46, .12); --red-text: #a40e26;
  --grey: #6e7781; --grey-fill: rgba(110, 119, 129, .14); --grey-text: #424a53;
  --radius: 10px; --shadow: 0 1px 2px rgba(0,0,0,.06), 0 1px 6px rgba(0,0,0,.04);
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, Ubuntu, "Helvetica Neue", sans-serif;
  font-size: 16px; line-height: 1.45; color: var(--text); background: var(--bg);
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #0f1216; --surface: #171b21; --surface-2: #1f252d; --text: #e6e9ed; --muted: #9aa4af; --border: #333b45;
    --accent: #4c9aff; --accent-text: #0b1320; --focus: #79b4ff;
    --blue: #4c9aff; --blue-fill: rgba(76, 154, 255, .15); --blue-text: #9cc7ff;
    --orange: #f0883e; --orange-fill: rgba(240, 136, 62, .15); --orange-text: #ffb77a;
    --green: #3fb950; --green-fill: rgba(63, 185, 80, .15); --green-text: #7ee28b;
    --red: #f85149; --red-fill: rgba(248, 81, 73, .15); --red-text: #ff9a94;
    --grey: #8b949e; --grey-fill: rgba(139, 148, 158, .16); --grey-text: #c4ccd4;
    --shadow: none;
  }
}
* { box-sizing: border-box; }
html { scroll-padding-top: 1rem; }
body { margin: 0; min-height: 100vh; }
h1, h2, h3 { line-height: 1.2; margin: 0 0 .5rem; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.15rem; } h3 { font-size: 1rem; }
a { color: var(--accent); }
button, input, select, textarea { font: inherit; color: inherit; }
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
.mask-host { flex: 1; display: flex; flex-direction: column; min-height: 0; }
.skip-link { position: absolute; left: -999px; top: 0; }
.skip-link:focus { left: 8px; top: 8px; z-index: 10; background: var(--surface); padding: 8px; }
.visually-hidden { position: absolute !important; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
[hidden] { display: none !important; }

/* Header and tabs */
.app-header { display: flex; align-items: center; gap: 1rem; padding: .4rem 1rem;
  background: var(--surface); border-bottom: 1px solid var(--border); }
.brand { font-weight: 700; text-decoration: none; color: var(--text); min-height: 44px; display: inline-flex; align-items: center; }
.tabs { display: flex; gap: .25rem; list-style: none; margin: 0; padding: 0; }
.tab { display: inline-flex; align-items: center; gap: .4rem; min-height: 44px; padding: 0 .9rem; border-radius: 8px;
  text-decoration: none; color: var(--muted); font-weight: 500; }
.tab[aria-current="page"] { color: var(--text); background: var(--surface-2); }
.count-badge { display: inline-block; min-width: 1.4em; padding: 0 .4em; border-radius: 999px; background: var(--orange);
  color: #fff; font-size: .8rem; font-weight: 700; text-align: center; }
.live-dot { margin-left: auto; font-size: .8rem; color: var(--muted); }
main { max-width: 960px; margin: 0 auto; padding: 1rem; }
main:focus { outline: none; }

/* Buttons and controls */
.btn { display: inline-flex; align-items: center; justify-content: center; gap: .35rem; min-height: 44px; min-width: 44px;
  padding: 0 .9rem; border: 1px solid var(--border); border-radius: 8px; background: var(--surface); cursor: pointer; font-weight: 500; }
.btn:hover { background: var(--surface-2); }
a.btn { text-decoration: none; color: inherit; }
.btn.primary { background: var(--accent); border-color: var(--accent); color: var(--accent-text); }
.btn.danger { color: var(--red-text); border-color: var(--red); }
.btn.small { min-height: 36px; padding: 0 .6rem; font-size: .9rem; }
.btn[aria-pressed="true"] { background: var(--text); color: var(--surface); border-color: var(--text); }
.btn:disabled { opacity: .5; cursor: not-allowed; }
input[type=file] { min-height: 44px; }
::file-selector-button { min-height: 40px; padding: 0 .8rem; margin-right: .6rem; border-radius: 6px; border: 1px solid var(--border); background: var(--surface-2); }
input[type=search], input[type=text], input[type=number], select, textarea {
  min-height: 44px; padding: .4rem .6rem; border: 1px solid var(--border); border-radius: 8px; background: var(--surface); }
.toolbar { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; margin: .5rem 0 1rem; }
.segmented { display: inline-flex; border: 1px solid var(--border); border-radius: 9px; overflow: hidden; }
.segmented .btn { border: 0; border-radius: 0; }
.page-head { display: flex; align-items: center; gap: .75rem; flex-wrap: wrap; justify-content: space-between; }
.muted { color: var(--muted); }
.empty { text-align: center; padding: 3rem 1rem; color: var(--muted); }

/* Toasts (live regions) */
.toasts { position: fixed; bottom: 1rem; left: 50%; transform: translateX(-50%); z-index: 50; width: min(560px, calc(100% - 2rem));
  display: flex; flex-direction: column; gap: .5rem; pointer-events: none; }
.toast { padding: .7rem 1rem; border-radius: 8px; box-shadow: 0 4px 18px rgba(0,0,0,.18); pointer-events: auto; }
.toast:empty, .toast-error:has(#alert:empty) { display: none; }
.toast-error { background: var(--surface); border: 2px solid var(--red); color: var(--text); }
.toast-error strong { color: var(--red-text); }
.toast-ok { background: var(--text); color: var(--surface); }
.toast .close { float: right; margin: -.4rem -.6rem 0 .5rem; background: none; border: 0; color: inherit; min-width: 44px; min-height: 44px; cursor: pointer; }

/* Status chips */
.chip { display: inline-flex; align-items: center; gap: .3rem; padding: .1rem .55rem; border-radius: 999px; font-size: .82rem;
  font-weight: 600; white-space: nowrap; border: 1px solid transparent; background: var(--grey-fill); color: var(--grey-text); }
.chip::before { font-size: .85em; }
.st-running { background: var(--blue-fill); color: var(--blue-text); border-color: var(--blue); }
.st-running::before { content: "●"; }
.st-awaiting { background: var(--orange-fill); color: var(--orange-text); border-color: var(--orange); }
.st-awaiting::before { content: "?"; }
.st-done { background: var(--green-fill); color: var(--green-text); border-color: var(--green); }
.st-done::before { content: "✓"; }
.st-failed { background: var(--red-fill); color: var(--red-text); border-color: var(--red); }
.st-failed::before { content: "✕"; }
.st-blocked::before { content: "⏸"; }
.st-idle::before { content: "○"; }
.st-urgent { background: var(--red-fill); color: var(--red-text); border-color: var(--red); }
.st-urgent::before { content: "!"; }

/* Workflows list */
.rows { list-style: none; margin: 0; padding: 0; display: flex; flex-direction: column; gap: .6rem; }
.row { display: grid; grid-template-columns: 64px 1fr auto; gap: .8rem; align-items: center; padding: .7rem;
  background: var(--surface); border: 1px solid var(--border); border-radius: var(--radius); box-shadow: var(--shadow); }
.row .thumb { width: 64px; height: 64px; border-radius: 8px; object-fit: cover; background: var(--surface-2); }
.row .thumb.none { display: flex; align-items: center; justify-content: center; color: var(--muted); font-size: .75rem; }
.row-title { font-weight: 600; font-size: 1.05rem; text-decoration: none; color: var(--text); }
.row-title::after { content: ""; }
.row-main { min-width: 0; display: flex; flex-direction: column; gap: .25rem; }
.row-line { display: flex; gap: .5rem; align-items: center; flex-wrap: wrap; font-size: .9rem; }
.row-actions { display: flex; gap: .35rem; flex-wrap: wrap; justify-content: flex-end; }
progress { width: 140px; height: 8px; accent-color: var(--accent); }
.await-badge { background: var(--orange-fill); color: var(--orange-text); border: 1px solid var(--orange); }

/* Tool cards */
.cards { list-style: none; margin: 0; padding: 0; display: flex; flex-direction: column; gap: .7rem; }
.card { background: var(--surface); border: 1px solid var(--border); border-left-width: 4px; border-radius: var(--radius); box-shadow: var(--shadow);
  scroll-margin: 5rem; transform-origin: center; }
.card-head { display: grid; grid-template-columns: minmax(0, 1fr) auto; gap: .3rem .8rem; padding: .75rem .9rem; cursor: pointer; border-radius: var(--radius);
  width: 100%; text-align: left; background: none; border: 0; min-height: 44px; }
.card-title { font-weight: 600; overflow-wrap: anywhere; }
.card-head .chip { white-space: normal; max-width: 55vw; align-self: start; }
.card-sub > * { min-width: 0; overflow-wrap: anywhere; }
.card-title .kind { color: var(--muted); font-weight: 400; margin-left: .4rem; font-size: .9rem; }
.card-sub { grid-column: 1 / -1; display: flex; flex-wrap: wrap; gap: .3rem 1rem; font-size: .88rem; color: var(--muted); }
.card-sub progress { width: 180px; }
.card.state-running { border-color: var(--blue); background: var(--blue-fill); }
.card.state-awaiting { border-color: var(--orange); background: var(--orange-fill); }
.card.state-failed { border-color: var(--red); }
.card.state-blocked { border-color: var(--grey); border-style: solid; border-left-style: dashed; }
.card.state-done { border-left-color: var(--green); }
.answer-cue { color: var(--orange-text); font-weight: 600; }
.detail-head .page-head { justify-content: flex-start; }
h1:focus { outline: none; }
.card.awaiting-motion .card-head .chip { animation: gentle 2.4s ease-in-out infinite; }
@keyframes gentle { 50% { opacity: .6; } }
.card.pulse { animation: pulse 1.2s ease-in-out 5; }
@keyframes pulse { 0%, 100% { transform: scale(1); opacity: 1; } 50% { transform: scale(1.02); opacity: .78; } }
@media (prefers-reduced-motion: reduce) {
  .card.pulse, .card.awaiting-motion .card-head .chip { animation: none; }
  .card.pulse { outline: 3px dashed var(--orange); outline-offset: 3px; }
  html { scroll-behavior: auto !important; }
}
.card-body { padding: 0 .9rem .9rem; display: flex; flex-direction: column; gap: 1rem; border-top: 1px solid var(--border); }
.card-body section { padding-top: .6rem; }
.card-body h3 { font-size: .95rem; color: var(--muted); text-transform: uppercase; letter-spacing: .03em; }
.form-grid { display: grid; grid-template-columns: minmax(120px, 200px) 1fr; gap: .5rem .8rem; align-items: center; }
.form-grid label { font-weight: 500; }
.form-grid .desc { grid-column: 2; font-size: .82rem; color: var(--muted); margin-top: -.35rem; }
.form-grid input[type=checkbox] { width: 24px; height: 24px; }
.form-actions { display: flex; gap: .5rem; margin-top: .7rem; flex-wrap: wrap; }
.dl { display: grid; grid-template-columns: auto 1fr; gap: .2rem .8rem; margin: 0; }
.dl dt { font-weight: 500; } .dl dd { margin: 0; color: var(--muted); overflow-wrap: anywhere; }
pre.log { max-height: 16rem; overflow: auto; background: var(--surface-2); padding: .6rem; border-radius: 8px; font-size: .8rem;
  white-space: pre-wrap; overflow-wrap: anywhere; margin: .5rem 0 0; }
.tiles { display: flex; flex-wrap: wrap; gap: .6rem; }
.tile { display: flex; flex-direction: column; gap: .2rem; width: 150px; padding: .4rem; border: 1px solid var(--border); border-radius: 8px;
  background: var(--surface); cursor: pointer; text-align: left; }
.tile img { width: 100%; height: 100px; object-fit: cover; border-radius: 6px; background: var(--surface-2); }
.tile span { font-size: .8rem; color: var(--muted); overflow-wrap: anywhere; }
.tile.absent { cursor: default; border-style: dashed; }
.history { list-style: none; padding: 0; margin: 0; font-size: .9rem; }
.history li { padding: .35rem 0; border-bottom: 1px solid var(--border); }
.diff { font-family: ui-monospace, monospace; font-size: .82rem; color: var(--muted); }
.mini { font-size: .85rem; }

/* Action Center */
.section-list { list-style: none; margin: 0 0 1.5rem; padding: 0; display: flex; flex-direction: column; gap: .6rem; }
.item { padding: .75rem .9rem; background: var(--surface); border: 1px solid var(--border); border-radius: var(--radius);
  display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: center; box-shadow: var(--shadow); }
.item .item-main { flex: 1 1 260px; min-width: 0; }
.item .item-actions { display: flex; gap: .4rem; flex-wrap: wrap; }
.item.blocking { border-left: 4px solid var(--red); }

/* Dialogs */
dialog { border: 1px solid var(--border); border-radius: 12px; padding: 0; background: var(--surface); color: var(--text);
  max-width: min(720px, calc(100vw - 1rem)); width: 100%; }
dialog::backdrop { background: rgba(0, 0, 0, .45); }
.dialog-head { display: flex; align-items: center; justify-content: space-between; gap: .5rem; padding: .6rem .9rem; border-bottom: 1px solid var(--border); }
.dialog-head h2 { margin: 0; }
.dialog-body { padding: .9rem; display: flex; flex-direction: column; gap: .8rem; }
.dialog-foot .btn { white-space: nowrap; }
.dialog-foot { display: flex; justify-content: flex-end; gap: .5rem; padding: .7rem .9rem; border-top: 1px solid var(--border); flex-wrap: wrap; }
.viewer-dialog img, .viewer-dialog video { display: block; max-width: 100%; max-height: 75vh; margin: 0 auto; }
.viewer-dialog audio { display: block; width: 100%; }
.confirm-dialog { max-width: 420px; }
.preview { max-width: 100%; max-height: 40vh; border-radius: 8px; border: 1px solid var(--border); }
fieldset { border: 1px solid var(--border); border-radius: 8px; padding: .6rem .8rem; }
.radio { display: flex; align-items: center; gap: .6rem; min-height: 44px; }
.radio input { width: 22px; height: 22px; }

/* Mask editor */
.editor-dialog.mask { max-width: none; width: 100%; height: 100%; max-height: none; margin: 0; inset: 0; border-radius: 0; border: 0; overflow: hidden; }
.editor-dialog.mask .dialog-foot { padding: .4rem .6rem; align-items: center; flex-wrap: nowrap; }
.editor-dialog.mask .dialog-head { padding: .3rem .6rem; }
.editor-error:empty { display: none; }
.editor-error { color: var(--red-text); border: 2px solid var(--red); border-radius: 8px; padding: .5rem .7rem; }
.mask-hint { margin-right: auto; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; min-width: 0; }
.editor-dialog.mask[open] { display: flex; flex-direction: column; }
.mask-editor { flex: 1; display: flex; flex-direction: column; min-height: 0; }
.mask-tools { display: flex; gap: .35rem; align-items: center; padding: .4rem .6rem; overflow-x: auto; border-bottom: 1px solid var(--border);
  -webkit-overflow-scrolling: touch; scrollbar-width: thin; flex-wrap: nowrap; }
.mask-tools .btn { flex: 0 0 auto; }
.mask-tools .sep { width: 1px; align-self: stretch; background: var(--border); flex: 0 0 1px; margin: 0 .2rem; }
.mask-tools label { display: inline-flex; align-items: center; gap: .3rem; font-size: .85rem; flex: 0 0 auto; min-height: 44px; }
.mask-tools input[type=range] { width: 110px; min-height: 44px; }
.mask-viewport { position: relative; flex: 1; overflow: hidden; background: repeating-conic-gradient(var(--surface-2) 0 25%, var(--surface) 0 50%) 0 0 / 24px 24px;
  touch-action: none; user-select: none; -webkit-user-select: none; min-height: 200px; }
.mask-stage { position: absolute; left: 0; top: 0; transform-origin: 0 0; }
.mask-stage img { display: block; pointer-events: none; -webkit-user-drag: none; }
.mask-stage canvas { position: absolute; left: 0; top: 0; opacity: .55; touch-action: none; cursor: crosshair; }
.mask-viewport.panning canvas, .mask-viewport.panning { cursor: grab; }
.mask-status { font-size: .8rem; color: var(--muted); padding: .25rem .6rem; }

/* Phones and touch */
@media (pointer: coarse) { .btn.small { min-height: 44px; } }
@media (max-width: 640px) {
  .btn.small { min-height: 44px; }
  main { padding: .6rem; }
  .app-header { gap: .4rem; padding: .3rem .5rem; flex-wrap: wrap; }
  .live-dot { display: none; }
  .tab { padding: 0 .6rem; }
  .row { grid-template-columns: 56px 1fr; }
  .row .thumb { width: 56px; height: 56px; }
  .row-actions { grid-column: 1 / -1; justify-content: flex-start; }
  .form-grid { grid-template-columns: 1fr; }
  .form-grid .desc { grid-column: 1; }
  progress, .card-sub progress { width: 100%; }
  dialog:not(.mask) { max-width: 100vw; width: 100vw; max-height: 100dvh; margin: auto 0 0; border-radius: 12px 12px 0 0; }
  .toolbar .btn { flex: 1 1 auto; }
  .mask-hint { display: none; }
  .editor-dialog.mask .dialog-foot { justify-content: flex-end; }
}
"""##
}
