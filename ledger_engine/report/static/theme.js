// The pages' colour mode, inlined at the top of every page (named by its hash in the page's
// Content Security Policy). Inside Airflow's frame a page takes the mode Airflow shows, which
// the user may have chosen apart from the system's: Airflow marks its root with the class
// "dark" or "light", and the page's root gets it as data-mode, which the style reads; again
// whenever Airflow's mode changes. Alone (a file, a tab of its own) or framed by a page of
// another origin, the page follows the system's colour scheme. Writes nothing to the console.
(() => {
  "use strict";
  let airflow = null;
  try {
    if (window.parent !== window) airflow = window.parent.document.documentElement;
  } catch {
    return; // framed by a page of another origin: not Airflow's
  }
  if (!airflow) return;
  const page = document.documentElement;
  const follow = () => {
    const mode = ["dark", "light"].find((m) => airflow.classList.contains(m));
    if (mode) page.dataset.mode = mode;
    else delete page.dataset.mode;
  };
  follow();
  new MutationObserver(follow).observe(airflow, { attributes: true, attributeFilter: ["class"] });
})();
