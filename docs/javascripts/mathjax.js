// MathJax 3 configuration for pymdownx.arithmatex (generic: true): typeset only the
// elements arithmatex marks, with the \( \) and \[ \] delimiters it writes. MathJax itself is
// bundled with the site (javascripts/mathjax/, copied by docs/hooks.py), not loaded from a CDN.
// MathJax typesets the page once when it loads; the theme's navigation.instant is off, so no
// re-typeset hook is needed (material's document$ recipe, run on the first load as well, clears
// MathJax's font cache mid-startup and leaves the glyphs blank).
window.MathJax = {
  tex: {
    inlineMath: [["\\(", "\\)"]],
    displayMath: [["\\[", "\\]"]],
    processEscapes: true,
    processEnvironments: true,
  },
  options: {
    ignoreHtmlClass: ".*|",
    processHtmlClass: "arithmatex",
  },
};
