"""The published numbers that benchmarks/reproduce.py sets beside ours, copied from the
papers' tables (../shared/seeds; the data folder's README repeats Tarnawski's). None is a
cell the paper leaves empty ("-")."""
from __future__ import annotations

# Tarnawski et al. Table 1 (time per sample = max load; lower is better), per workload:
# DP (contiguous), IP contiguous, IP non-contiguous (Gurobi, 1% or 20 minutes), DPL, expert,
# local search, PipeDream, Scotch. Keys are the data files' names (folder, stem).
T1_COLUMNS = ("dp", "ip_contiguous", "ip_any", "dpl", "expert", "local_search", "pipedream", "scotch")
TARNAWSKI_T1: dict[tuple[str, str], tuple[float | None, ...]] = {
    ("throughput-operators", "bert_l-3_inference"): (27.92, 27.92, 21.91, 27.92, None, 24.32, None, 35.94),
    ("throughput-operators", "bert_l-6_inference"): (29.58, 29.58, 28.33, 29.58, None, 42.52, None, 49.80),
    ("throughput-operators", "bert_l-12_inference"): (147.48, 147.48, 130.03, 147.48, None, 257.38, None, 230.12),
    ("throughput-operators", "resnet50_inference"): (124.35, 124.35, 124.35, 124.35, None, 250.08, None, 197.84),
    ("throughput-operators", "bert_l-3_training"): (65.30, 65.30, 54.21, 65.30, None, 66.17, None, 416.97),
    ("throughput-operators", "bert_l-6_training"): (72.86, 72.86, 71.64, 79.50, None, 94.86, None, 130.20),
    ("throughput-operators", "bert_L-12_training"): (438.00, 438.00, 373.42, 438.00, None, 737.99, None, 800.79),
    ("throughput-operators", "resnet50_training"): (255.19, 255.19, 255.19, 255.19, None, 530.95, None, 379.21),
    ("throughput", "bert24_inference"): (17.79, 17.79, 17.71, 17.79, 20.08, 17.80, 17.79, 18.03),
    ("throughput", "resnet50_inference"): (33.77, 33.77, 33.31, 33.77, 43.92, 35.63, 39.38, 34.50),
    ("throughput", "inceptionv3_inference"): (51.55, 51.55, 51.52, 51.55, 102.48, 54.03, 60.42, 54.01),
    ("throughput", "gnmt_inference"): (32.91, 32.91, 31.68, 32.91, 46.21, 31.75, 33.03, 34.92),
    ("throughput", "bert24_training"): (41.75, 41.75, 39.79, 41.75, 49.40, 39.93, 41.75, 42.01),
    ("throughput", "resnet50_training"): (78.63, 78.63, 76.65, 78.65, 112.11, 81.32, 83.67, 80.10),
    ("throughput", "inceptionv3_training"): (122.76, 123.35, 117.72, 123.93, 213.65, 122.80, 128.32, 128.32),
    ("throughput", "gnmt_training"): (107.00, 107.00, 88.47, 107.00, 137.15, 91.52, 107.35, 107.00),
}
# The more precise optima the data folder's README gives for the operator graphs' DP.
TARNAWSKI_OPERATOR_DP = {"bert_l-3_inference": 27.9186, "bert_l-6_inference": 29.5795,
                         "bert_l-12_inference": 147.478, "resnet50_inference": 124.349,
                         "bert_l-3_training": 65.3031, "bert_l-6_training": 72.865,
                         "bert_L-12_training": 437.998, "resnet50_training": 255.194}

# Tarnawski Table 3: DP on the operator graph vs DP on the graph contracted to layers.
TARNAWSKI_T3 = {"bert_l-3_inference": (27.92, 27.92), "bert_l-6_inference": (29.58, 29.58),
                "bert_l-12_inference": (147.48, 159.43), "resnet50_inference": (124.35, 129.15),
                "bert_l-3_training": (65.30, 65.30), "bert_l-6_training": (72.86, 72.86),
                "bert_L-12_training": (438.00, 465.41), "resnet50_training": (255.19, 269.63)}

# Tarnawski Table 4, layer rows (single-stream latency; the `latency/` files): the IP's value,
# the gap it certified at its 60-minute limit, greedy, the max-load DP's split, Scotch (True:
# memory violated by 20-34%), expert (None: "OOM", a major memory violation).
T4_COLUMNS = ("ip", "greedy", "maxload_dp", "scotch", "expert")
TARNAWSKI_T4: dict[str, tuple[float, str, float, float, tuple[float, bool], float | None]] = {
    "bert24_inference": (100.22, "<1%", 100.22, 108.03, (108.03, False), 111.94),
    "resnet50_inference": (1191.02, "93.1%", 4197.06, 1443.79, (3610.87, True), None),
    "inceptionv3_inference": (1318.08, "93.5%", 2485.24, 1621.74, (3068.00, True), None),
    "gnmt_inference": (225.6, "<1%", 268.50, 244.33, (636.91, True), 293.40),
}
# Table 4's operator rows (the `latency-operators/` files; no expert split)
TARNAWSKI_T4_OPERATORS: dict[str, tuple[float, str, float, float, tuple[float, bool], float | None]] = {
    "bert_l-3_inference": (408.47, "<1%", 416.20, 415.90, (497.75, False), None),
    "bert_l-6_inference": (438.06, "12.6%", 494.13, 445.48, (564.61, False), None),
    "bert_l-12_inference": (729.56, "93.8%", 867.84, 1327.03, (1755.41, False), None),
    "resnet50_inference": (672.06, "54.0%", 839.54, 1123.65, (857.73, False), None),
}

# Archer et al. Table 3 (REGAL graphs): geometric mean of each lower bound / best solution.
ARCHER_KS = (2, 4, 8, 16, 32, 64)
ARCHER_T3 = {"simple": (0.9579, 0.8795, 0.7911, 0.5821, 0.4087, 0.3336),
             "bottleneck": (0.9794, 0.8818, 0.7918, 0.5824, 0.4090, 0.3338),
             "bottleneck_guess": (0.9804, 0.8826, 0.7918, 0.5824, 0.4090, 0.3338),
             "exact": (0.9804, 0.9579, 0.9407, 0.8929, 0.5910, 0.3810)}
# Archer Table 2 (production models, proprietary): SliceGraph value / simple bound per order.
ARCHER_T2 = {"mla": (1.216, 1.538, 1.950, 2.224, 2.304, 2.326),
             "mla-weighted": (1.206, 1.516, 1.920, 2.182, 2.258, 2.283),
             "random-1": (1.220, 1.551, 1.959, 2.230, 2.309, 2.333),
             "random-100": (1.201, 1.512, 1.916, 2.179, 2.258, 2.282),
             "random-10000": (1.199, 1.509, 1.911, 2.176, 2.256, 2.281),
             "brkga-100": (1.201, 1.516, 1.919, 2.184, 2.263, 2.288),
             "brkga-10000": (1.199, 1.509, 1.910, 2.175, 2.255, 2.272)}

# DiviML Table I (latency, ms, B = 1) and Table IV (throughput, images/s, B = 128), 1-channel
# 10-module ER(0.2) networks: best device, MET, Greedy, HEFT, (1+1) EA, SA, MILP, MILP-SPLIT, bound.
DIVIML_COLUMNS = ("single", "met", "eft", "heft", "ea", "sa", "exact", "milp_split", "bound")
# DiviML Tables I (B = 1, ms) and IV (B = 128, images/s): each row's network, as (channels,
# variant) of `part generate randwire`, and its values in DIVIML_COLUMNS' order.
DIVIML_NETS = {"1-chan": (1, "sdep"), "sdep, 2-chan": (2, "sdep"), "sdep, 3-chan": (3, "sdep"),
               "sdep, 4-chan": (4, "sdep"), "wdep, 2-chan": (2, "wdep"), "wdep, 3-chan": (3, "wdep"),
               "wdep, 4-chan": (4, "wdep")}
DIVIML = {("1-chan", 1): (211.7, 209.9, 104.4, 99.9, 97.5, 98.9, 80.1, 80.1, 80.1),
          ("sdep, 2-chan", 1): (234.9, 219.3, 111.8, 109.3, 103.8, 106.2, 78.9, 79.1, 73.7),
          ("sdep, 3-chan", 1): (236.5, 235.4, 114.2, 108.5, 104.7, 106.1, 79.9, 80.3, 68.1),
          ("sdep, 4-chan", 1): (250.5, 249.1, 116.3, 111.3, 107.6, 109.5, 79.1, 79.4, 61.3),
          ("wdep, 2-chan", 1): (225.2, 223.8, 103.7, 101.7, 97.3, 98.1, 74.3, 77.6, 73.3),
          ("wdep, 3-chan", 1): (229.9, 229.3, 107.4, 104.3, 100.9, 103.1, 76.6, 78.7, 71.8),
          ("wdep, 4-chan", 1): (242.9, 240.7, 106.8, 104.4, 102.0, 103.6, 71.6, 77.0, 62.1),
          ("1-chan", 128): (54, 56, 74, 75, 84, 87, 114, 135, 164),
          ("sdep, 2-chan", 128): (48, 50, 67, 66, 75, 78, 95, 119, 180),
          ("sdep, 3-chan", 128): (49, 51, 68, 70, 78, 81, 116, 129, 196),
          ("sdep, 4-chan", 128): (47, 48, 65, 67, 76, 79, 73, 126, 209),
          ("wdep, 2-chan", 128): (51, 53, 76, 75, 86, 87, 89, 137, 182),
          ("wdep, 3-chan", 128): (49, 52, 73, 73, 82, 85, 72, 137, 181),
          ("wdep, 4-chan", 128): (47, 50, 72, 74, 82, 84, 65, 138, 207)}

# DiviML Table II, torchvision row: the mean time (ms) of the paper's torchvision models on each device.
DIVIML_T2 = {"cpu": 223.10, "t4": 12.16, "a100": 7.80}
DIVIML_T2_RATIOS = {"cpu": "29", "t4": "1.6", "a100": "1"}  # as the paper prints them (223.10 / 7.80 is 28.6)

# DiviML Table III (latency, RWNNs of ER(0.2) modules): seconds for the full MILP and for
# MILP-SPLIT to reach their best solutions, and the factor, per number of modules.
DIVIML_T3 = {("sdep", 5): (82.69, 2.26, 37), ("sdep", 10): (232.24, 4.83, 48), ("sdep", 20): (1907.12, 13.49, 141),
             ("wdep", 5): (129.08, 2.45, 53), ("wdep", 10): (271.66, 5.00, 54), ("wdep", 20): (5850.37, 14.81, 395)}
