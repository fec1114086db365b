"""The web room: the server-rendered page around a result. Views (the page, its HTMX fragments,
/fits/, saved links), the language middleware and switcher (i18n) and the shared page cache
(page_cache). It imports result, catalogue, inputs and the estimator, never api."""
