"""fairforge: demographically balanced face-forgery test sets, real-world degradations,
detectors, and the fairness metrics of FairFD, the deepfake Benchmark, the real-world
Assessment framework and the Exposure-at-a-distance study."""

__version__ = "0.1.0"
