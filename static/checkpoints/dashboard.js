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

  // "/" focuses the page's search box (the first search form's text input), as on most sites; typed into
  // a field, it stays a slash.
  document.addEventListener("keydown", function (event) {
    if (event.key !== "/" || event.ctrlKey || event.metaKey || event.altKey) { return; }
    var active = document.activeElement;
    if (active && (active.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(active.tagName))) { return; }
    var box = document.querySelector(
      "form[role=search] input[type=search], form[role=search] input[type=text], form[role=search] input:not([type])"
    );
    if (box) {
      event.preventDefault();
      box.focus();
      box.select();
    }
  });
})();
