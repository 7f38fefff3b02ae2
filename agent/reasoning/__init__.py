"""Who makes each decision in the graph: the Reasoner protocol, the offline analyst and the chat
model, with the model adapter, its prompts and structured-output schemas.
"""
