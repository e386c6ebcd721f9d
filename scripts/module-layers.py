#!/usr/bin/env python3
"""Layers of a crate's top-level modules, from the `crate::` paths each one
names (comments and test files left out). Prints each layer, bottom first,
or the import cycles and exits 1.

    scripts/module-layers.py crates/acp-client/src
"""
import os,re,sys
root=sys.argv[1]
mods={}
for dp,_,fs in os.walk(root):
    for f in fs:
        if not f.endswith('.rs'): continue
        p=os.path.join(dp,f); rel=os.path.relpath(p,root)
        top=rel.split('/')[0].removesuffix('.rs')
        if top in ('lib','main'): continue
        # test-only files do not count as layering
        if rel.endswith('tests.rs') or '/tests/' in rel: continue
        text=re.sub(r"//[^\n]*","",open(p).read())
        text=re.split(r'\n#\[cfg\(test\)\]\s*\n(?:#\[[^\n]*\]\s*\n)*mod tests \{',text)[0]
        deps=set(re.findall(r'\bcrate::([a-z_]+)',text))
        for m in re.findall(r'use crate::\{([^}]*)\}',text):
            deps|=set(re.findall(r'(?:^|,)\s*([a-z_]+)',m))
        deps.discard(top)
        mods.setdefault(top,set()).update(deps)
known=set(mods)
for m in mods: mods[m]&=known
# Tarjan SCC
idx={};low={};st=[];on=set();sccs=[];i=[0]
def sc(v):
    idx[v]=low[v]=i[0];i[0]+=1;st.append(v);on.add(v)
    for w in mods[v]:
        if w not in idx: sc(w);low[v]=min(low[v],low[w])
        elif w in on: low[v]=min(low[v],idx[w])
    if low[v]==idx[v]:
        c=[]
        while True:
            w=st.pop();on.discard(w);c.append(w)
            if w==v:break
        sccs.append(c)
for v in mods:
    if v not in idx: sc(v)
cyc=[c for c in sccs if len(c)>1]
# layers
layer={}
def L(v,seen=()):
    if v in layer: return layer[v]
    layer[v]=0 if not mods[v] else 1+max(L(w) for w in mods[v])
    return layer[v]
if cyc:
    print("CYCLES:",cyc); sys.exit(1)
for v in mods: L(v)
for n in sorted(set(layer.values())):
    print(n, ' '.join(sorted(m for m in layer if layer[m]==n)))
print("no cycles")
