/** The console's only stylesheet, inlined (no external fonts, scripts or CDNs). Colours meet WCAG AA. */
export const STYLES = `
:root { --ink:#1b1f24; --muted:#4b5563; --line:#d6dae0; --bg:#f6f7f9; --card:#fff; --accent:#1d4ed8; --accent-ink:#fff;
  --danger:#b42318; --ok:#067647; --focus:#f59e0b; }
* { box-sizing: border-box; }
body { margin:0; font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,Ubuntu,sans-serif; color:var(--ink); background:var(--bg); }
a { color:var(--accent); }
a:focus-visible, button:focus-visible, input:focus-visible, select:focus-visible, summary:focus-visible, textarea:focus-visible {
  outline:3px solid var(--focus); outline-offset:2px; }
.skip { position:absolute; left:-999px; top:0; background:var(--card); padding:.5rem 1rem; }
.skip:focus { left:1rem; z-index:10; }
header.top { background:#111827; color:#fff; }
header.top .inner { max-width:880px; margin:0 auto; padding:.75rem 1.25rem; display:flex; align-items:center; gap:1.5rem; flex-wrap:wrap; }
header.top .brand { font-weight:700; font-size:1.1rem; color:#fff; text-decoration:none; letter-spacing:.01em; }
header.top nav { display:flex; gap:1rem; flex-wrap:wrap; align-items:center; flex:1; }
header.top nav a { color:#e5e7eb; text-decoration:none; padding:.25rem .1rem; border-bottom:2px solid transparent; }
header.top nav a[aria-current="page"] { color:#fff; border-bottom-color:#93c5fd; }
header.top .signout { margin:0 0 0 auto; }
header.top .signout button { background:transparent; color:#e5e7eb; border:1px solid #4b5563; padding:.3rem .75rem; }
/* Long unbroken values (emails, key names, URLs) wrap instead of widening the page. */
main { max-width:880px; margin:0 auto; padding:1.5rem 1.25rem 3rem; overflow-wrap:break-word; }
h1 { font-size:1.6rem; margin:.25rem 0 1rem; }
h2 { font-size:1.2rem; margin:0 0 .75rem; }
.card { background:var(--card); border:1px solid var(--line); border-radius:10px; padding:1.25rem 1.5rem; margin:0 0 1.25rem; }
.narrow { max-width:440px; }
label { display:block; font-weight:600; margin:.75rem 0 .25rem; }
.hint { color:var(--muted); font-size:.9rem; margin:.25rem 0 0; }
input[type=text], input[type=email], input[type=password] { width:100%; padding:.6rem .7rem; font:inherit; border:1px solid #9ca3af; border-radius:6px; background:#fff; color:var(--ink); }
button, .button { display:inline-block; font:inherit; font-weight:600; padding:.55rem 1.1rem; border-radius:6px; border:1px solid var(--accent); background:var(--accent); color:var(--accent-ink); cursor:pointer; text-decoration:none; }
button.secondary { background:#fff; color:var(--accent); }
button.danger { background:#fff; color:var(--danger); border-color:var(--danger); padding:.3rem .75rem; }
.actions { margin-top:1rem; display:flex; gap:.75rem; align-items:center; flex-wrap:wrap; }
.alert { border-radius:8px; padding:.9rem 1.1rem; margin:0 0 1.25rem; border:1px solid; }
.alert.error { background:#fef3f2; border-color:#fda29b; color:#7a271a; }
.alert.success { background:#ecfdf3; border-color:#75e0a7; color:#054f31; }
.alert.warn { background:#fffaeb; border-color:#fec84b; color:#7a2e0e; }
.secret { display:flex; gap:.5rem; align-items:stretch; margin:.5rem 0; }
.secret pre { flex:1; min-width:0; margin:0; white-space:pre-wrap; overflow-wrap:anywhere; }
.secret button { align-self:flex-start; }
.secret code { flex:1; min-width:0; overflow-wrap:anywhere; background:#111827; color:#f9fafb; padding:.6rem .75rem; border-radius:6px; font-size:.95rem; }
code, pre { font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace; }
pre { background:#111827; color:#f9fafb; padding:.9rem 1rem; border-radius:8px; overflow-x:auto; font-size:.875rem; margin:.5rem 0; }
table { width:100%; border-collapse:collapse; }
th, td { text-align:left; padding:.55rem .5rem; border-bottom:1px solid var(--line); vertical-align:middle; }
td.name { overflow-wrap:anywhere; min-width:6rem; }
td.date { white-space:nowrap; }
th { font-size:.85rem; color:var(--muted); font-weight:600; }
td code { background:#eef2f7; padding:.1rem .35rem; border-radius:4px; }
.badge { white-space:nowrap; display:inline-block; font-size:.8rem; font-weight:600; padding:.1rem .5rem; border-radius:999px; background:#eef2f7; color:#1f2937; }
.badge.revoked { background:#fee4e2; color:#912018; }
.badge.active { background:#dcfae6; color:#085d3a; }
dl.facts { display:grid; grid-template-columns:max-content minmax(0, 1fr); gap:.4rem 1.25rem; margin:0; }
dl.facts dt { color:var(--muted); }
dl.facts dd { margin:0; font-weight:600; min-width:0; overflow-wrap:anywhere; }
progress { -webkit-appearance:none; appearance:none; width:100%; height:12px; border:0; border-radius:999px; background:#e5e7eb; overflow:hidden; margin:.25rem 0; }
progress::-webkit-progress-bar { background:#e5e7eb; border-radius:999px; }
progress::-webkit-progress-value { background:var(--accent); border-radius:999px; }
progress::-moz-progress-bar { background:var(--accent); border-radius:999px; }
.muted { color:var(--muted); }
.sr-only { position:absolute; width:1px; height:1px; overflow:hidden; clip:rect(0 0 0 0); white-space:nowrap; }
details summary { cursor:pointer; font-weight:600; margin:.5rem 0; }
.or { margin:1.25rem 0 .5rem; color:var(--muted); }
/* Usage page: the 30-day chart (inline SVG) and its legend. */
figure.chart { margin:.5rem 0 0; }
figure.chart svg { display:block; width:100%; height:160px; background:#f9fafb; border-radius:6px; }
.chart-axis { display:flex; justify-content:space-between; font-size:.8rem; color:var(--muted); margin-top:.25rem; }
.legend { font-size:.85rem; color:var(--muted); margin-top:.5rem; display:flex; flex-wrap:wrap; gap:.25rem .75rem; align-items:center; }
.swatch { display:inline-block; width:.8rem; height:.8rem; border-radius:2px; vertical-align:middle; margin-right:.25rem; }
.bar-charged { fill:var(--accent); background:var(--accent); }
.bar-refunded { fill:#f79009; background:#f79009; }
.bar-refused { fill:#d92d20; background:#d92d20; }
.bar-free { fill:#98a2b3; background:#98a2b3; }
table.stack td code { overflow-wrap:anywhere; }
table.recent { font-size:.875rem; }
/* Error codes wrap only after their underscores (<wbr>). */
table.stack td.words code { overflow-wrap:normal; }
/* Side by side, routes and error codes stay whole; the key name and the request id wrap instead. */
@media (min-width: 601px) {
  table.recent td.nowrap code { white-space:nowrap; overflow-wrap:normal; }
}
/* Documentation pages (docs/*.md): wide tables and code scroll in their own box, never the page. */
.doc { min-width:0; overflow-wrap:break-word; }
.doc .table-wrap { overflow-x:auto; margin:.75rem 0; }
.doc .table-wrap table { width:auto; min-width:100%; font-size:.9rem; }
.doc td, .doc th { vertical-align:top; }
.doc p code, .doc li code, .doc td code { background:#eef2f7; padding:.05rem .3rem; border-radius:4px; overflow-wrap:anywhere; }
.doc pre code { background:none; padding:0; }
.doc img { max-width:100%; height:auto; }
.doc .repo-path { font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace; font-size:.9em; }
/* Try it: the form, the photos with their faces boxed (boxes in percent of the image: they follow its
   displayed size), the distance scale. */
fieldset.try-source { border:1px solid var(--line); border-radius:8px; margin:1rem 0 0; padding:.25rem 1rem 1rem; min-width:0; }
fieldset.try-source legend { font-weight:600; padding:0 .25rem; }
label.inline { display:flex; gap:.5rem; align-items:baseline; font-weight:400; margin:.5rem 0 0; }
.try-options { display:flex; gap:0 1rem; flex-wrap:wrap; }
.try-options > div { flex:1 1 12rem; min-width:0; }
select { width:100%; padding:.55rem .6rem; font:inherit; border:1px solid #9ca3af; border-radius:6px; background:#fff; color:var(--ink); }
input[type=file] { max-width:100%; font:inherit; }
.try-status { min-height:1.5em; margin:.75rem 0 0; }
.try-status.error { color:var(--danger); }
.try-status.ok { color:var(--ok); }
.verdict { font-size:1.1rem; }
.verdict.same { color:var(--ok); font-weight:700; }
.verdict.different, .verdict.error { color:var(--danger); font-weight:700; }
.try-pair { display:grid; grid-template-columns:repeat(auto-fit, minmax(240px, 1fr)); gap:1rem; align-items:start; }
.try-figure { margin:0; min-width:0; }
.try-figure figcaption { font-size:.85rem; color:var(--muted); margin-top:.35rem; overflow-wrap:anywhere; }
.try-stage { position:relative; line-height:0; }
.try-stage img { display:block; width:100%; height:auto; border-radius:6px; background:#e5e7eb; }
.try-boxes { position:absolute; inset:0; pointer-events:none; }
.face-box { position:absolute; border:2px dashed #f79009; border-radius:3px; }
.face-box.used { border:3px solid #12b76a; box-shadow:0 0 0 1px #fff, inset 0 0 0 1px #fff; }
.eye { position:absolute; width:8px; height:8px; margin:-4px 0 0 -4px; border-radius:50%; background:#f04438; box-shadow:0 0 0 1.5px #fff; }
.swatch.try-used { border:3px solid #12b76a; } .swatch.try-other { border:2px dashed #f79009; } .swatch.try-eye { background:#f04438; border-radius:50%; }
.try-scale { position:relative; height:28px; background:#fee4e2; border-radius:6px; margin:.75rem 0 1rem; }
.try-scale .accept { position:absolute; left:0; top:0; bottom:0; background:#d1fadf; border-radius:6px 0 0 6px; }
.try-scale .tick { position:absolute; top:-5px; bottom:-5px; width:4px; margin-left:-2px; border-radius:2px; }
.tick.distance, .swatch.tick-distance { background:#1d4ed8; }
.tick.threshold, .swatch.tick-threshold { background:#111827; }
.tick.deepface, .swatch.tick-deepface { background:#7a5af8; }
.tick.far-1e-2, .swatch.tick-far-1e-2 { background:#f79009; }
.tick.far-1e-3, .swatch.tick-far-1e-3 { background:#b42318; }
.try-scale .tick.distance { width:6px; margin-left:-3px; top:-8px; bottom:-8px; }
dl.try-marks dt { display:flex; align-items:center; gap:.25rem; }
dl.try-marks .tar { font-weight:400; font-size:.85rem; }
#try-result pre { white-space:pre-wrap; overflow-wrap:anywhere; }
#try-json, #try-represent-json { max-height:24rem; overflow-y:auto; overflow-x:hidden; }
@media (max-width: 600px) {
  header.top .inner { gap:.5rem 1rem; padding:.6rem 1rem; }
  /* Brand and Sign out share the first row; the navigation takes the second, whole. */
  header.top .signout { order:1; }
  header.top nav { order:2; flex-basis:100%; }
  main { padding:1rem 1rem 2rem; }
  .card { padding:1rem; }
  .secret { flex-direction:column; }
  .secret pre { font-size:.8rem; }
  /* Key tables: one block per key, each value on its own labelled line. */
  /* The Usage page's tables (table.stack) the same way. */
  table.keys thead, table.stack thead { position:absolute; width:1px; height:1px; overflow:hidden; clip:rect(0 0 0 0); }
  table.keys, table.keys tbody, table.keys tr, table.stack, table.stack tbody, table.stack tr { display:block; width:100%; }
  table.keys tr, table.stack tr { border-bottom:1px solid var(--line); padding:.5rem 0; }
  table.keys td, table.stack td { display:flex; flex-wrap:wrap; align-items:baseline; gap:.1rem .75rem; border:0; padding:.2rem 0; white-space:normal; }
  table.keys td::before, table.stack td::before { content:attr(data-label); content:attr(data-label) / ""; flex:0 0 5.5rem; color:var(--muted); font-size:.85rem; font-weight:600; }
  table.keys td.name > span, table.stack td.name > span { flex:1 1 0; min-width:0; font-weight:600; }
}
`;
