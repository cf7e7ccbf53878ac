/* Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0. */
/* Renders the math pymdownx.arithmatex (generic mode) marks in the page, \( … \) inline and \[ … \] as a block, with
   the KaTeX release vendored in docs/assets/katex/ (offline). Only the marked elements are read, so a backslash and
   a parenthesis elsewhere (a code block, a regular expression in prose) stay as written. `document$` is Material's
   page observable: it fires on the first load and after every instant navigation. */
document$.subscribe(function () {
  document.querySelectorAll(".arithmatex").forEach(function (element) {
    renderMathInElement(element, {
      delimiters: [
        { left: "\\(", right: "\\)", display: false },
        { left: "\\[", right: "\\]", display: true },
      ],
      throwOnError: false,
    });
  });
});
