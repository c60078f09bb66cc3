"""Fixed prompts at temperature 0 against a vLLM OpenAI endpoint; completions and top log-probabilities to JSON.

Runs in the engine's image on the host (stdlib only):

    API_URL=http://station-vllm:8000 OPENAI_API_KEY=... python3 -c "$(cat completion_probe.py)" '{"model": ...,
        "prompts": [...], "max_tokens": 32, "logprobs": 5}'

Writes /results/probe.json: [{"prompt", "tokens", "top_logprobs": [{token: logprob}, ...]}].
"""

import json
import os
import sys
import urllib.request


def complete(url, key, model, prompt, max_tokens, logprobs):
    body = {
        "model": model,
        "prompt": prompt,
        "max_tokens": max_tokens,
        "temperature": 0,
        "logprobs": logprobs,
        "seed": 0,
    }
    request = urllib.request.Request(
        f"{url}/v1/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {key}"},
    )
    with urllib.request.urlopen(request, timeout=300) as response:
        choice = json.load(response)["choices"][0]
    return {
        "prompt": prompt,
        "tokens": choice["logprobs"]["tokens"],
        "top_logprobs": choice["logprobs"]["top_logprobs"],
    }


def main():
    probe = json.loads(sys.argv[1])
    url, key = os.environ["API_URL"], os.environ["OPENAI_API_KEY"]
    answers = [
        complete(url, key, probe["model"], prompt, probe["max_tokens"], probe["logprobs"])
        for prompt in probe["prompts"]
    ]
    with open("/results/probe.json", "w") as out:
        json.dump(answers, out)


if __name__ == "__main__":
    main()
