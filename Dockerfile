# The analyst CLI / LangGraph API server image, for docker-compose users.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md langgraph.json ./
COPY agent ./agent
COPY memory ./memory
COPY graphs ./graphs
COPY .agent-memory ./.agent-memory
RUN pip install --no-cache-dir -e '.[studio]'
ENV ANALYST_DATA_DIR=/data
VOLUME ["/data"]
EXPOSE 2024
CMD ["langgraph", "dev", "--host", "0.0.0.0", "--port", "2024", "--no-browser"]
