// The UI's only script: stored images open at full size in a dialog; a run in progress refreshes its body.
(() => {
  const zoom = document.getElementById("zoom");
  document.addEventListener("click", (ev) => {
    const img = ev.target.closest("img.zoomable");
    if (img && zoom) {
      ev.preventDefault();
      zoom.querySelector("img").src = img.src;
      zoom.showModal();
    } else if (ev.target === zoom) {
      zoom.close();
    }
  });
  const body = document.getElementById("run-body");
  if (!body || !body.dataset.live) return;
  const poll = async () => {
    try {
      const resp = await fetch(body.dataset.live, {cache: "no-store"});
      if (resp.ok) {
        body.innerHTML = await resp.text(); // rendered and escaped by the server
      }
    } catch (err) {
      // the server went away: try again on the next tick
    }
    const state = body.querySelector("[data-status]");
    if (!state || state.dataset.status === "running") setTimeout(poll, 1500);
  };
  setTimeout(poll, 1500);
})();
