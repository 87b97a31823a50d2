"""Tests of the resolver: versions, SAT engine, rules, profiles, conformance, ResolveSet."""
