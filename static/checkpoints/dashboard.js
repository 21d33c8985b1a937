/* Progressive enhancement only: every page works without this file. */
(function () {
  "use strict";
  document.documentElement.classList.add("js");

  function closestCard(element) {
    return element.closest(".json-card") || document;
  }

  document.addEventListener("click", function (event) {
    var target = event.target;
    if (!(target instanceof Element)) { return; }
    var expand = target.closest("[data-json-expand]");
    var collapse = target.closest("[data-json-collapse]");
    if (expand || collapse) {
      var open = Boolean(expand);
      closestCard(expand || collapse).querySelectorAll("details.j-node").forEach(function (node) {
        node.open = open;
      });
      return;
    }
    var copy = target.closest("[data-copy]");
    if (copy) {
      var field = document.querySelector(copy.getAttribute("data-copy"));
      if (field && navigator.clipboard) {
        navigator.clipboard.writeText(field.value).then(function () {
          copy.textContent = "Copied";
        });
      } else if (field) {
        field.select();
      }
    }
  });
})();
