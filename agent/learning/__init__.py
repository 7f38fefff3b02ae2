"""The write path: what a user said becomes episodes, facts, events, summaries, candidates and
procedures (learner, extraction and grounding, the profile registry, consolidation), plus the
model path's memory tools and "remember this".
"""
