"""Diagnosis of the held-out verifier on the validation splits of indep-nlpaug, multi-latin
and multi-greek (issue 17): error kinds, feature medians, score histograms, chains.
Reads the cache of ``experiments/verifier_transfer/verifier_transfer.py features``; validation splits only.

    python -m experiments.verifier_transfer.verifier_diagnose
"""
import json
from pathlib import Path

import numpy as np
from sklearn.metrics import adjusted_rand_score

from experiments.verifier_transfer import verifier_transfer as vt
from neardup.graph.cluster import connected_components
from neardup.graph.edges import Pairs

cache = Path('/tmp/neardup-verifier-transfer')
data = {s: dict(np.load(cache / f"{s}-char5.npz")) for s in vt.SETS}
allf = list(data['reuters-news']['features'])
meta = json.load(open('neardup/models/verifier-news/model.json'))
names = meta['features']; cols = [allf.index(f) for f in names]
trainable = [s for s in vt.SETS if 'train_x' in data[s]]
for held in ['indep-nlpaug', 'multi-latin', 'multi-greek']:
    tr = [t for t in trainable if t != held]
    m = vt.fit_model([data[t]['train_x'] for t in tr], [data[t]['train_y'] for t in tr], cols, names)
    vc = [vt.validation_curve(data[s], 'validation', vt.verifier_scores(m, data[s]['validation_x'][:, cols])) for s in vt.SETS if s != held]
    t, worst = vt.maximin_threshold(vc)
    d = data[held]; p = vt.verifier_scores(m, d['validation_x'][:, cols])
    cl = d['validation_clusters']; L, R = d['validation_left'], d['validation_right']; n = len(cl)
    truth = cl[L] == cl[R]
    curve = vt.validation_curve(d, 'validation', p)
    print(f"\n=== {held}: LOSO threshold {t} (other-val worst {worst:.4f}); own val ARI at t {curve[t]:.4f}; best own {max(curve.values()):.4f} at {max(curve, key=curve.get)}")
    print(' curve', {k: round(v,3) for k,v in curve.items() if k>=0.5})
    # oracle
    lab_or = connected_components(Pairs(L[truth], R[truth], p[truth]), n)
    print(' candidate oracle val ARI', round(adjusted_rand_score(cl, lab_or),4))
    keep = p >= t
    print(f' candidates {len(L)}, true {truth.sum()}, false merges (false edges kept) {(keep & ~truth).sum()}, verifier misses (true edges dropped) {(~keep & truth).sum()}')
    lab = connected_components(Pairs(L[keep], R[keep], p[keep]), n)
    # ARI with only false edges removed / only misses fixed
    fix_fm = keep & truth
    fix_ms = keep | truth
    for nm, k in [('no false merges', fix_fm), ('no misses', fix_ms)]:
        lb = connected_components(Pairs(L[k], R[k], p[k]), n)
        print(f'  ARI if {nm}: {adjusted_rand_score(cl, lb):.4f}')
    # docs per cluster sizes
    langs = d['validation_lang']
    if len(set(langs)) > 1:
        for lg in sorted(set(langs)):
            sel = langs == lg
            ep = sel[L]
            print(f'  lang {lg}: docs {sel.sum()}, ARI {adjusted_rand_score(cl[sel], lab[sel]):.3f}, FM {(keep&~truth&ep).sum()}, miss {(~keep&truth&ep).sum()}, true {(truth&ep).sum()}')
    # feature medians
    x = d['validation_x'][:, cols]
    groups = {'TP': keep&truth, 'FM': keep&~truth, 'miss': ~keep&truth, 'TN': ~keep&~truth}
    print('  feature medians  ' + ' '.join(f'{g}:{v.sum()}' for g, v in groups.items()))
    for j, f in enumerate(names):
        print(f'   {f:22s}' + ' '.join(f'{np.median(x[v, j]) if v.any() else np.nan:8.3f}' for v in groups.values()))
    # train set medians of same features on positives in train (all)
    xt = np.concatenate([data[s]['train_x'][:, cols] for s in tr]); yt = np.concatenate([data[s]['train_y'] for s in tr])
    print('  train pos/neg medians: ' + ', '.join(f'{f}:{np.median(xt[yt==1,j]):.2f}/{np.median(xt[yt==0,j]):.2f}' for j,f in enumerate(names)))
    # score histogram of true / false near threshold
    bins = [0,0.3,0.5,0.7,0.8,0.85,0.9,0.95,0.98,1.01]
    print('  true hist ', np.histogram(p[truth], bins)[0]); print('  false hist', np.histogram(p[~truth], bins)[0])
    # chains: pairs of docs in same predicted cluster and different true cluster that are not direct FM edges
    from collections import Counter
    comp = Counter(lab); big = [c for c, k in comp.items() if k > 1]
    impure = 0
    for c in big:
        members = np.where(lab == c)[0]
        if len(set(cl[members])) > 1: impure += 1
    print(f'  predicted clusters >1: {len(big)}, impure {impure}; true clusters>1 {sum(1 for c,k in Counter(cl).items() if k>1)}')
    sizes = sorted([k for c,k in comp.items()], reverse=True)[:5]; print('  largest predicted', sizes, 'largest true', sorted(Counter(cl).values(), reverse=True)[:5])
