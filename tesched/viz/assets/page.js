/* tesched pages: click a loop of the IR to highlight the C lines it became and show its origin. */
(function () {
  "use strict";
  var selected = null;
  var lit = [];
  function clear() {
    if (selected) selected.classList.remove("sel");
    for (var i = 0; i < lit.length; i++) lit[i].classList.remove("hl");
    lit = [];
  }
  function show(loop) {
    clear();
    selected = loop;
    loop.classList.add("sel");
    var page = loop.closest("[data-kernel]");
    var ranges = (loop.dataset.c || "").split(",").filter(Boolean);
    var first = null;
    var cLines = page.querySelectorAll(".cl");
    for (var r = 0; r < ranges.length; r++) {
      var ab = ranges[r].split("-"), a = +ab[0], b = +ab[1];
      for (var n = a; n <= b && n <= cLines.length; n++) {
        var el = cLines[n - 1];
        el.classList.add("hl"); lit.push(el); if (!first) first = el;
      }
    }
    if (first) {
      var pane = first.closest(".code");
      pane.scrollTop = first.offsetTop - pane.offsetTop - 40;
    }
    var info = page.querySelector(".loopinfo");
    if (info) {
      var lines = ranges.length ? "C lines " + ranges.join(", ") : "no C lines (the loop was removed)";
      info.textContent = "";
      var b = document.createElement("b");
      b.textContent = loop.dataset.name;
      info.appendChild(b);
      info.appendChild(document.createTextNode(
        " of stage " + loop.dataset.stage + ": " + loop.dataset.kind + " loop, made by " +
        loop.dataset.origin + "; " + lines));
    }
  }
  document.addEventListener("click", function (ev) {
    var loop = ev.target.closest(".loop");
    if (loop) show(loop);
  });
  document.addEventListener("keydown", function (ev) {
    if ((ev.key === "Enter" || ev.key === " ") && ev.target.classList && ev.target.classList.contains("loop")) {
      ev.preventDefault();
      show(ev.target);
    }
  });
  document.documentElement.dataset.ready = "1";
  document.documentElement.dataset.readyMs = String(performance.now());
})();
