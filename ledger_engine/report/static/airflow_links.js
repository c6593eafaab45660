// Links to Airflow's own pages (a DAG run, say), marked data-airflow-route, inlined into the
// workbench's pages (named by its hash in their Content Security Policy). Airflow frames a
// plugin's page in a sandbox without allow-top-navigation, so a plain link would open Airflow
// inside its own frame; the frame shares Airflow's origin, so the page hands the address to
// Airflow's router instead: a new entry in the history of Airflow's window, and the popstate
// event its router listens to, as the browser's own back and forward give it. Alone (a tab of
// its own) or framed by a page of another origin, such a link is an ordinary link.
(() => {
  "use strict";
  let airflow = null;
  try {
    if (window.parent !== window && window.parent.document) airflow = window.parent;
  } catch {
    return; // framed by a page of another origin: not Airflow's
  }
  if (!airflow) return;
  document.addEventListener("click", (event) => {
    const link = event.target instanceof Element && event.target.closest("a[data-airflow-route]");
    const plain = event.button === 0 && !(event.metaKey || event.ctrlKey || event.shiftKey);
    if (!link || event.defaultPrevented || !plain || event.altKey) return;
    event.preventDefault();
    // The router keys its entries by an index in history.state; the new entry follows the
    // current one, so that Back returns to the workbench.
    const current = airflow.history.state;
    const index = current && Number.isInteger(current.idx) ? current.idx + 1 : 0;
    const key = Math.random().toString(36).slice(2, 10);
    airflow.history.pushState({ usr: null, key, idx: index }, "", link.href);
    airflow.dispatchEvent(new PopStateEvent("popstate", { state: airflow.history.state }));
  });
})();
