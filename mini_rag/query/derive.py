"""Derivational variants of a Snowball stem: the verb and its noun, which stemming keeps apart.

The Snowball English stemmer removes inflections (``retained`` -> ``retain``) and a few
derivational suffixes (``validation`` -> ``valid``), but leaves most Latinate verb/noun
pairs apart: ``retain``/``retention`` stem to ``retain``/``retent``, ``receive``/
``reception`` to ``receiv``/``recept``.  A question asking how long tickets are
*retained* is answered by a table headed *Retention period*; the answering stage uses the
variants below as bridges (``relevance.covered``) so such a chunk covers the question's
term.  Retrieval uses them too, at ``[retrieval] derivation_weight`` of a term's weight
(``Retriever.alternatives``), so that the table is found in the first place.

Each rule is a pair of stem endings ``(a, b)``, applied both ways: a stem ending in ``a``
with at least two characters before it has the variant ending in ``b`` (an empty ``a``
adds ``b`` to any stem).  They are the
regular alternations of English verb and noun stems after Snowball (verified on the
pairs in the table):

============  ==========================================================
rule          examples (stems)
============  ==========================================================
ain / ent     retain/retent (retention), detain/detent
eiv / ept     receiv/recept, perceiv/percept, conceiv/concept
uc / uct      reduc/reduct, introduc/introduct, deduc/deduct
mit / miss    submit/submiss, permit/permiss, transmit/transmiss
end / ens     extend/extens, suspend/suspens
olv / olut    resolv/resolut, solv/solut
ib / ipt      describ/descript, subscrib/subscript, prescrib/prescript
um / umpt     assum/assumpt, consum/consumpt
ifi / if      notifi/notif, verifi/verif, certifi/certif, identifi/identif
id / is       decid/decis, provid/provis, divid/divis
li / lic      appli/applic, impli/implic
li / lianc    compli/complianc, reli/relianc
ud / us       conclud/conclus, exclud/exclus, includ/inclus
oy / uct      destroy/destruct
s / sur       eras/erasur (erasure), disclos/disclosur, expos/exposur, enclos/enclosur
se / sur      close/closur (closure)
l / lur       fail/failur (failure)
(none) / eris comput/computeris (computer, computerised), charact/characteris:
              Snowball drops the -er of the noun, not the -ise of the verb
============  ==========================================================

Not every variant is a word; callers keep only the variants their index contains.
Known false friend: ``contain``/``content`` (Snowball stems *contention* to
``content``) is excluded.

>>> vocabulary = {"retent", "notif", "computeris", "data"}
>>> [[v for v in variants(s) if v in vocabulary] for s in ("retain", "notifi", "comput", "data")]
[['retent'], ['notif'], ['computeris'], []]
"""
from __future__ import annotations

from typing import List, Tuple

from ..text.memo import text_memo

__all__ = ["RULES", "variants"]

RULES = (("ain", "ent"), ("eiv", "ept"), ("uc", "uct"), ("mit", "miss"), ("end", "ens"),
         ("olv", "olut"), ("ib", "ipt"), ("um", "umpt"), ("ifi", "if"), ("id", "is"),
         ("li", "lic"), ("li", "lianc"), ("ud", "us"), ("oy", "uct"), ("s", "sur"), ("se", "sur"), ("l", "lur"),
         ("", "eris"))

#: Stems whose variant by the rules is another word altogether.
_FALSE_FRIENDS = frozenset({("contain", "content"), ("content", "contain")})

_MIN_BASE = 2


def variants(stem: str) -> List[str]:
    """The stems a derivational rule relates to ``stem`` (distinct, in rule order); a new
    list each call, computed once per stem (:func:`_variants`, a bounded memo)."""
    return list(_variants(stem))


@text_memo()
def _variants(stem: str) -> Tuple[str, ...]:
    out: List[str] = []
    for a, b in RULES:
        for x, y in ((a, b), (b, a)):
            if stem.endswith(x) and len(stem) - len(x) >= _MIN_BASE:
                v = stem[:len(stem) - len(x)] + y
                if v != stem and v not in out and (stem, v) not in _FALSE_FRIENDS:
                    out.append(v)
    return tuple(out)
