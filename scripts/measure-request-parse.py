#!/usr/bin/env python3
"""Measures what vLLM's API server spends parsing one chat request that carries its image as a
base64 data URL, with a faithful equivalent of the path the body takes before input processing.

vLLM's OpenAI server (vllm/entrypoints/openai/api_server.py, FastAPI on uvicorn): the route
create_chat_completion(request: ChatCompletionRequest, raw_request) makes FastAPI read the body,
json.loads it (Starlette's Request.json) and validate it into the pydantic ChatCompletionRequest,
on the event loop. Then MediaConnector.load_from_url_async hands the data URL to the media thread
pool (_load_data_url: base64 decode, PIL decode), off the loop. This script times, per body size:
  parse    json.loads of the body + pydantic model_validate into a request model with the same
           message/content-part nesting (ChatCompletionRequest's messages are a list of dicts whose
           content is a list of {"type": "text"} / {"type": "image_url", "image_url": {"url"}}
           parts): the event loop's share
  b64      base64.b64decode of the data URL's payload: the media thread's share before PIL
Prints one JSON line per size with the minimum and median of --repeats runs (ns per body byte).

  scripts/measure-request-parse.py [--sizes 250000,500000,1000000] [--repeats 30]
"""
import argparse
import base64
import json
import os
import statistics
import time
from typing import List, Literal, Optional, Union

from pydantic import BaseModel


class ImageUrl(BaseModel):
    url: str
    detail: Optional[str] = None


class TextPart(BaseModel):
    type: Literal["text"]
    text: str


class ImagePart(BaseModel):
    type: Literal["image_url"]
    image_url: ImageUrl


class Message(BaseModel):
    role: str
    content: Union[str, List[Union[TextPart, ImagePart]]]


class ChatRequest(BaseModel):
    model: str
    messages: List[Message]
    max_completion_tokens: Optional[int] = None
    temperature: Optional[float] = None
    stream: bool = False
    ignore_eos: bool = False


def body_of(image_bytes: int) -> bytes:
    """A chat request as vllm bench serve's openai-chat backend sends it: one user message, the
    image as a JPEG data URL (random bytes: base64 does not care about content), a short prompt."""
    payload = base64.b64encode(os.urandom(image_bytes)).decode("ascii")
    request = {"model": "Qwen/Qwen3-VL-8B-Instruct",
               "messages": [{"role": "user", "content": [
                   {"type": "text", "text": "Describe the image in detail. " * 8},
                   {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64," + payload}}]}],
               "max_completion_tokens": 128, "temperature": 0.0, "stream": True, "ignore_eos": False}
    return json.dumps(request).encode()


def time_ns(fn, repeats):
    samples = []
    for _ in range(repeats):
        start = time.perf_counter_ns()
        fn()
        samples.append(time.perf_counter_ns() - start)
    return min(samples), statistics.median(samples)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="250000,500000,1000000", help="encoded image bytes per request")
    ap.add_argument("--repeats", type=int, default=30)
    args = ap.parse_args()
    for size in (int(s) for s in args.sizes.split(",")):
        body = body_of(size)
        parsed = ChatRequest.model_validate(json.loads(body))
        url = parsed.messages[0].content[1].image_url.url
        payload = url.split(",", 1)[1]
        parse_min, parse_med = time_ns(lambda: ChatRequest.model_validate(json.loads(body)), args.repeats)
        b64_min, b64_med = time_ns(lambda: base64.b64decode(payload), args.repeats)
        print(json.dumps({"image_bytes": size, "body_bytes": len(body),
                          "parse_ms_min": round(parse_min / 1e6, 3), "parse_ms_median": round(parse_med / 1e6, 3),
                          "parse_ns_per_body_byte_min": round(parse_min / len(body), 3),
                          "b64decode_ms_min": round(b64_min / 1e6, 3), "b64decode_ms_median": round(b64_med / 1e6, 3),
                          "load_average": os.getloadavg()[0]}))


if __name__ == "__main__":
    main()
