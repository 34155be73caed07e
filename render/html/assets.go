package html

// css is the page's whole style: system fonts only (nothing to fetch),
// light colours that print.
const css = `
:root{--fg:#1f2328;--dim:#656d76;--line:#d0d7de;--bg:#fff;--soft:#f6f8fa;--bad:#cf222e;--warn:#bf8700;--ok:#1a7f37;--link:#0969da}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;color:var(--fg);background:var(--bg)}
header{background:#24292f;color:#fff;padding:14px 24px}
header h1{margin:0;font-size:20px}
header .sub{margin:2px 0 8px;color:#d0d7de}
nav a{color:#fff;margin-right:14px;text-decoration:none;border-bottom:1px solid #8c959f}
section{padding:6px 24px 18px;border-bottom:1px solid var(--line)}
h2{font-size:18px;margin:14px 0 8px}
h3{font-size:15px;margin:14px 0 6px}
a{color:var(--link)}
code{font:12px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
table{border-collapse:collapse;margin:6px 0}
th,td{border:1px solid var(--line);padding:3px 8px;text-align:left;vertical-align:top}
th{background:var(--soft);font-weight:600}
table.kv th{width:9em}
table.counters td{text-align:right;min-width:5.5em;font-variant-numeric:tabular-nums}
td.zero{color:#8c959f}
ul.verdicts{list-style:none;padding:0}
ul.verdicts li{border-left:4px solid var(--bad);background:#fff5f5;padding:6px 10px;margin:6px 0}
ul.verdicts li.warn{border-color:var(--warn);background:#fff8e5}
ul.verdicts li.ok{border-color:var(--ok);background:#f0fff4}
table.fns{font-size:13px}
table.fns td:first-child{white-space:nowrap}
table.fns a.filter{margin-left:0}
table.fns td.n{text-align:right;font-variant-numeric:tabular-nums}
table.fns tr.bad td:first-child{box-shadow:inset 3px 0 var(--bad)}
table.fns .src{color:var(--dim);font:12px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
table.fns div.bad{color:var(--bad)}
table.fns div.warn{color:#7d4e00}
.dim{color:var(--dim)}
a.filter{font-size:12px;font-weight:400;margin-left:8px}
.note{color:var(--dim);font-style:italic}
.tree{overflow:auto;max-height:900px;border:1px solid var(--line);border-radius:6px;background:#fff;padding:4px}
.tree a:hover polygon,.tree a:hover path{stroke-width:3}
table.nodes tr.current td{background:#dbeafe}
table.nodes tr.onpath td:first-child{box-shadow:inset 3px 0 #1f6feb}
tr:target td{background:#fff3b0 !important}
svg.chart{width:100%;max-width:1100px;height:auto;border:1px solid var(--line);border-radius:6px;background:#fff}
svg.chart .grid{stroke:#eaeef2}
svg.chart .ax{font:11px system-ui,sans-serif;fill:var(--dim)}
svg.chart .series{fill:none;stroke-width:1.6}
svg.chart .area{opacity:.35}
svg.chart .mk-ckpt{fill:var(--warn)}
svg.chart .mk-err{fill:var(--bad)}
ul.legend{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:4px 18px}
.swatch{display:inline-block;width:14px;height:4px;margin-right:6px;vertical-align:middle}
form.filters{position:sticky;top:0;background:var(--bg);padding:6px 0;border-bottom:1px solid var(--line);z-index:1}
form.filters label{margin-right:10px}
#f-node button{font-size:12px}
table.log{font-size:13px;width:100%}
table.log td:nth-child(3){white-space:nowrap}
table.log td:first-child,table.log td:nth-child(2){text-align:right;font-variant-numeric:tabular-nums}
table.log tr.err td{background:#fff5f5}
table.log tr.ckpt td{background:#fff8e5}
table.log tr.notable td:nth-child(4){font-weight:600}
footer{padding:12px 24px;color:var(--dim);font-size:12px}
@media print{form.filters{display:none}.tree{max-height:none}}
`

// script filters the log by function, action, device, node and
// notability. It reads and writes this page only: no request, no storage.
const script = `
(function(){
var q=function(id){return document.getElementById(id)};
var fn=q('f-fn'),act=q('f-act'),dev=q('f-dev'),nt=q('f-notable'),nodeBox=q('f-node'),count=q('f-count');
if(!fn)return;
var rows=document.querySelectorAll('#log-table tbody tr');
var node=null;
function apply(){
var shown=0;
for(var i=0;i<rows.length;i++){
var r=rows[i],d=r.dataset;
var ok=(!fn.value||d.fn===fn.value)&&(!act.value||d.act===act.value)&&(!dev.value||d.dev===dev.value)&&(!nt.checked||d.notable==='1')&&(!node||(d.node===node.id&&d.dev===node.dev));
r.hidden=!ok;if(ok)shown++;
}
count.textContent=shown+' of '+rows.length+' rows shown';
}
function setNode(n){
node=n;nodeBox.textContent='';
if(!n)return;
var b=document.createElement('button');b.type='button';b.textContent='node #'+n.id+' on device '+n.dev+' \u00d7';
b.onclick=function(){setNode(null);apply()};nodeBox.appendChild(b);
}
fn.onchange=act.onchange=dev.onchange=nt.onchange=apply;
q('filters').addEventListener('submit',function(e){e.preventDefault()});
document.addEventListener('click',function(e){
var a=e.target.closest&&e.target.closest('a.filter');
if(!a)return;
fn.value='';act.value='';dev.value='';nt.checked=false;setNode(null);
if(a.dataset.fn!==undefined){fn.value=a.dataset.fn}
if(a.dataset.node!==undefined){setNode({id:a.dataset.node,dev:a.dataset.dev})}
apply();
});
function reveal(){
var t=location.hash&&document.getElementById(location.hash.slice(1));
if(t&&t.hidden){fn.value='';act.value='';dev.value='';nt.checked=false;setNode(null);apply();t.scrollIntoView()}
}
window.addEventListener('hashchange',reveal);
apply();reveal();
})();
`
