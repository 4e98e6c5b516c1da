"""The seeded knowledge base: deterministic per seed, different across seeds, lenient lookups."""

from __future__ import annotations

import pytest

from gym_tinker.tools.knowledge_base import KnowledgeBase, knowledge_base


def _facts(kb: KnowledgeBase) -> dict:
    return {name: dict(entity.facts) for name, entity in kb.entities.items()}


def test_same_seed_same_world_different_seed_different_world():
    assert _facts(KnowledgeBase(11)) == _facts(KnowledgeBase(11))
    a, b = KnowledgeBase(11), KnowledgeBase(12)
    assert a.names() != b.names()
    assert [e.facts for e in a.entities.values()] != [e.facts for e in b.entities.values()]
    assert a.search("companies") == KnowledgeBase(11).search("companies")


def test_world_shape_and_unique_names():
    kb = KnowledgeBase(5)
    counts = {kind: len(kb.names(kind)) for kind in ("product", "company", "city", "person")}
    assert counts == {"product": 10, "company": 8, "city": 8, "person": 10}
    assert len(set(kb.names())) == len(kb.names()) == 36
    cities = kb.names("city")
    for person in kb.names("person"):
        assert kb.fact(person, "city") in cities


def test_distances_are_symmetric_positive_and_obey_the_triangle_inequality():
    kb = KnowledgeBase(2)
    cities = kb.names("city")
    for a in cities:
        for b in cities:
            if a == b:
                continue
            d = kb.fact(a, f"distance to {b}")
            assert d == kb.fact(b, f"distance to {a}") and d >= 1
            for c in cities:
                if c not in (a, b):
                    # Rounding each leg to whole km may cost up to 1.5 km in total.
                    assert d <= kb.fact(a, f"distance to {c}") + kb.fact(c, f"distance to {b}") + 1.5


def test_lookup_formats_and_is_lenient_about_names_and_attributes():
    kb = KnowledgeBase(3)
    product = kb.names("product")[0]
    price = kb.fact(product, "price")
    expected = f"{product} price: {price:.2f} USD"
    assert kb.lookup(product, "price") == expected
    assert kb.lookup(f"  {product.upper()} ", "Cost") == expected
    assert kb.lookup(product.split()[0], "price") == expected  # a unique first word is enough
    company = kb.names("company")[0]
    assert kb.lookup(company, "stock price") == kb.lookup(company, "share_price")
    a, b = kb.names("city")[:2]
    assert (
        kb.lookup(a, f"distance from {b.lower()}")
        == f"{a} distance to {b}: {kb.fact(a, f'distance to {b}')} km"
    )


def test_lookup_errors_name_close_matches_and_valid_attributes():
    kb = KnowledgeBase(3)
    product = kb.names("product")[0]
    typo = product[:-1] + ("x" if product[-1] != "x" else "y")
    message = kb.lookup(typo, "price")
    assert message.startswith(f"Error: no entity named {typo!r}. Close names: {product}")
    assert (
        kb.lookup(product, "colour")
        == f"Error: {product} has no attribute 'colour'. Available: price, stock."
    )
    city = kb.names("city")[0]
    assert kb.lookup(city, "distance to Atlantis").endswith("Available: population, distance to <city>.")


def test_search_ranks_the_named_entity_first_and_is_deterministic():
    kb = KnowledgeBase(4)
    for name in kb.names():
        first_line = kb.search(f"tell me about {name}").splitlines()[0]
        assert first_line.startswith(f"{name} (")
    lines = kb.search("companies").splitlines()
    assert len(lines) == 3 and all("(company)" in line for line in lines)
    assert lines == sorted(lines)  # equal scores: ordered by name
    assert kb.search("qqqq zzzz").startswith("No results for 'qqqq zzzz'")


def test_seed_validation_and_cache():
    with pytest.raises(ValueError, match="non-negative int, got -1"):
        KnowledgeBase(-1)
    assert knowledge_base(9) is knowledge_base(9)
