"""Xapian side of `npm run bench:bm25 -- --engines xapian` (spawned by bench/bm25.ts; needs Debian's python3-xapian).

Usage: bm25-xapian.py DOCS QUERIES DEPTH REPEAT DBDIR
  DOCS     one document a line: its terms (already analysed by our keywordTokens), space-separated
  QUERIES  one query a line, the same way
  DBDIR    an empty folder for the on-disk (glass) database; the caller removes it

Each term is added with wdf + 1 per occurrence (so document lengths are our |d|), searched with
BM25Weight(k1 = 1.2, k2 = 0, k3 = 1, b = 0.75, min_normlen = 0) and an OP_OR query over the query's terms, top
DEPTH. Timing: build = add every document and commit; queries/s = median of REPEAT timed passes after one warm-up
pass over all queries. Prints one JSON object on stdout.
"""
import json
import os
import resource
import sys
import time

import xapian


def main() -> None:
    docs_path, queries_path, depth, repeat, db_dir = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    t0 = time.perf_counter()
    db = xapian.WritableDatabase(db_dir, xapian.DB_CREATE_OR_OVERWRITE)
    with open(docs_path, encoding="utf-8") as f:
        for line in f:
            doc = xapian.Document()
            for term in line.split():
                doc.add_term(term)
            db.add_document(doc)
    db.commit()
    db.close()
    build_seconds = time.perf_counter() - t0
    with open(queries_path, encoding="utf-8") as f:
        queries = [line.split() for line in f.read().split("\n")]
    if queries and queries[-1] == []:
        queries.pop()
    rdb = xapian.Database(db_dir)
    enquire = xapian.Enquire(rdb)
    enquire.set_weighting_scheme(xapian.BM25Weight(1.2, 0, 1, 0.75, 0))
    parsed = [xapian.Query(xapian.Query.OP_OR, q) for q in queries]

    def one_pass() -> int:
        hits = 0
        for query in parsed:
            enquire.set_query(query)
            hits += enquire.get_mset(0, depth).size()
        return hits

    hits = one_pass()
    rates = []
    for _ in range(repeat):
        t = time.perf_counter()
        one_pass()
        rates.append(len(parsed) / (time.perf_counter() - t))
    rates.sort()
    size = sum(os.path.getsize(os.path.join(db_dir, name)) for name in os.listdir(db_dir))
    print(json.dumps({
        "build_seconds": build_seconds,
        "queries_per_second": rates[len(rates) // 2],
        "hits": hits,
        "index_bytes": size,
        "peak_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        "version": xapian.version_string(),
    }))


if __name__ == "__main__":
    main()
