// Search ranking for the course site (html_search_scorer in tools/site/conf.py). Sphinx scores an API
// object whose name contains the word (apply_rope for "rope") above a page whose title and text teach
// it; a reader searching "RoPE" wants notebook 03 first. A notebook page gets a bonus larger than
// any object match (15 + 11), so among pages that match, notebooks come first, in their own order.
var Scorer = {
  score: (result) => {
    const [docname, , , , score] = result;
    return /^\d\d_/.test(docname) ? score + 30 : score;
  },
  objNameMatch: 11,
  objPartialMatch: 6,
  objPrio: { 0: 15, 1: 5, 2: -5 },
  objPrioDefault: 0,
  title: 15,
  partialTitle: 7,
  term: 5,
  partialTerm: 2,
};
