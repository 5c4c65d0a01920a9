"""The benchmark plots of docs/benchmarks.md, made from the checked-in
results files (bench/results/*.json, one per comparison and run).

    python bench/plot_results.py [--results bench/results] [--out docs/images]

For each comparison the newest file is used (the date ends its name:
``KIND_YYYY-MM-DD.json``), so a new run's file added beside the old ones
updates the plots. Writes formats.png (tokens/s per file type for both
engines), concurrency.png (throughput against concurrent requests),
ttft.png (time-to-first-token distributions) and speculative.png. Needs
matplotlib (in the `[test]` extra)."""

import argparse
import glob
import json
import os

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OURS, THEIRS = "#1f77b4", "#ff7f0e"


def newest(results_dir, kind):
    """The newest results file of one comparison, loaded."""
    paths = sorted(glob.glob(os.path.join(results_dir, kind + "_*.json")))
    if not paths:
        raise SystemExit("plot_results: no %s_*.json in %s" % (kind, results_dir))
    with open(paths[-1], encoding="utf-8") as f:
        return json.load(f)


def caption(ax, doc):
    ax.text(0.0, -0.25, "%s; %s" % (doc["date"], doc["machine"][:90]), transform=ax.transAxes,
            fontsize=7, color="0.4", va="top")


def save(fig, out_dir, name):
    path = os.path.join(out_dir, name)
    fig.savefig(path, dpi=100, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return path


def plot_formats(doc, out_dir):
    types = [r["type"] for r in doc["rows"]]
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    for ax, metric, title in ((axes[0], "prefill", "prefill, 512-token prompt"), (axes[1], "decode", "batch-1 decode")):
        xs = range(len(types))
        ax.bar([x - 0.2 for x in xs], [r[metric]["vllm-cpp"] for r in doc["rows"]], 0.4, label="vllm-cpp", color=OURS)
        ax.bar([x + 0.2 for x in xs], [r[metric]["llama.cpp"] for r in doc["rows"]], 0.4, label="llama.cpp",
               color=THEIRS)
        ax.set_xticks(list(xs))
        ax.set_xticklabels(types, fontsize=8, rotation=30)
        ax.set_ylabel("tokens/s")
        ax.set_title(title)
        ax.legend(fontsize=8)
    caption(axes[0], doc)
    fig.suptitle("SmolLM2-135M per file type, vllm-cpp vs llama.cpp", y=1.02)
    return save(fig, out_dir, "formats.png")


def versus(ax, xs, ours, theirs, labels, xlabel, ylabel=None, log_y=False):
    """Two engines' lines against a doubling x axis (concurrency)."""
    ax.plot(xs, ours, "o-", color=OURS, label=labels[0])
    ax.plot(xs, theirs, "s--", color=THEIRS, label=labels[1])
    ax.set_xscale("log", base=2)
    if log_y:
        ax.set_yscale("log")
    ax.set_xticks(xs)
    ax.set_xticklabels([str(x) for x in xs])
    ax.set_xlabel(xlabel)
    if ylabel:
        ax.set_ylabel(ylabel)
    ax.legend(fontsize=8)


def plot_concurrency(serving, http, out_dir):
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    rows = serving["rows"]
    versus(axes[0], [r["concurrency"] for r in rows], [r["throughput"]["vllm-cpp"] for r in rows],
           [r["throughput"]["llama.cpp"] for r in rows], ("vllm-cpp (batched)", "llama.cpp (one at a time)"),
           "concurrent requests", "output tokens/s")
    axes[0].set_title("in process")
    caption(axes[0], serving)
    rows = http["rows"]
    versus(axes[1], [r["clients"] for r in rows], [r["throughput"]["vllm-cpp"] for r in rows],
           [r["throughput"]["llama-cpp-python"] for r in rows], ("vllm-cpp serve", "llama-cpp-python server"),
           "concurrent clients (streaming HTTP)")
    axes[1].set_title("over HTTP")
    caption(axes[1], http)
    fig.suptitle("Throughput against concurrency, SmolLM2-135M Q4_1, 2 threads", y=1.02)
    return save(fig, out_dir, "concurrency.png")


def plot_ttft(bench, serving, out_dir):
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    ax = axes[0]
    rows = bench["rows"]
    ax.boxplot([r["ttft_s"] for r in rows], showfliers=True)
    ax.set_xticks(range(1, len(rows) + 1))
    ax.set_xticklabels([str(r["clients"]) for r in rows])
    ax.set_xlabel("requests submitted at once")
    ax.set_ylabel("time to first token (s)")
    ax.set_title("vllm-cpp, each request's TTFT (%d prompt tokens)" % bench["input_len"], fontsize=10)
    caption(ax, bench)
    rows = serving["rows"]
    versus(axes[1], [r["concurrency"] for r in rows], [r["ttft_p50_s"]["vllm-cpp"] for r in rows],
           [r["ttft_p50_s"]["llama.cpp"] for r in rows], ("vllm-cpp", "llama.cpp (one at a time)"),
           "concurrent requests", "median TTFT (s)", log_y=True)
    axes[1].set_title("median TTFT against concurrency", fontsize=10)
    caption(axes[1], serving)
    return save(fig, out_dir, "ttft.png")


def plot_speculative(doc, out_dir):
    rows = doc["rows"]
    labels = ["%s\n%s" % (r["task"], r["method"]) for r in rows]
    fig, ax = plt.subplots(figsize=(11, 3.8))
    colors = [THEIRS if "llama.cpp" in r["method"] else OURS for r in rows]
    ax.bar(range(len(rows)), [r["speedup"] for r in rows], color=colors)
    ax.axhline(1.0, color="0.3", linewidth=0.8)
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels(labels, fontsize=7)
    ax.set_ylabel("speed-up over no speculation")
    ax.set_title("Speculative decoding, batch-1 decode (SmolLM2-135M Q4_1, greedy)")
    caption(ax, doc)
    return save(fig, out_dir, "speculative.png")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", default=os.path.join(HERE, "results"))
    parser.add_argument("--out", default=os.path.join(HERE, "..", "docs", "images"))
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    serving = newest(args.results, "serving-concurrency")
    written = [plot_formats(newest(args.results, "llamacpp-formats"), args.out),
               plot_concurrency(serving, newest(args.results, "http-serving"), args.out),
               plot_ttft(newest(args.results, "vllm-cpp-bench_ttft"), serving, args.out),
               plot_speculative(newest(args.results, "speculative"), args.out)]
    for path in written:
        print(path)
    return written


if __name__ == "__main__":
    main()
