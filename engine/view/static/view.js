// psyq view: keep a run page's numbers current while the run is written.
// Polls the JSON endpoint named by <body data-progress> every second and writes each value into the
// element whose data-cell names it, with textContent only (never as markup).
"use strict";
(function () {
  const url = document.body.dataset.progress;
  if (!url) return;
  function update(data) {
    const cells = (data && data.cells) || {};
    for (const el of document.querySelectorAll("[data-cell]")) {
      if (Object.prototype.hasOwnProperty.call(cells, el.dataset.cell)) {
        const text = String(cells[el.dataset.cell]);
        if (el.textContent !== text) el.textContent = text;
      }
    }
  }
  async function poll() {
    try {
      const response = await fetch(url, { cache: "no-store", credentials: "same-origin" });
      if (response.ok) update(await response.json());
    } catch (e) {
      // the viewer stopped or the network dropped: try again on the next tick
    }
    setTimeout(poll, 1000);
  }
  setTimeout(poll, 1000);
})();
