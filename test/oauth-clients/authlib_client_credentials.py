# Drives the client_credentials grant with Python's authlib (Debian's
# python3-authlib, on requests), as a service would: one client with
# client_secret_basic and a scope, one with client_secret_post, the client's
# token against /me, a wrong secret and a scope outside the registered one,
# each of which must raise authlib's OAuthError. Prints one JSON object of
# what it saw; test/client-credentials.test.ts checks it.
import json
import sys

from authlib.integrations.base_client.errors import OAuthError
from authlib.integrations.requests_client import OAuth2Session

base, basic_id, basic_secret, post_id, post_secret = sys.argv[1:6]
token_url = base + "/auth/token"
seen = {}


def summary(token):
    return {
        "token_type": token["token_type"],
        "expires_in": token["expires_in"],
        "scope": token.get("scope"),
        "refresh_token": token.get("refresh_token"),
    }


def refused(action):
    try:
        result = action()
    except OAuthError as error:
        return {"raised": "OAuthError", "error": error.error}
    return {"raised": None, "result": str(result)[:200]}


basic = OAuth2Session(basic_id, basic_secret, token_endpoint_auth_method="client_secret_basic", scope="invoices:read")
seen["basic"] = summary(basic.fetch_token(token_url, grant_type="client_credentials"))

post = OAuth2Session(post_id, post_secret, token_endpoint_auth_method="client_secret_post")
seen["post"] = summary(post.fetch_token(token_url, grant_type="client_credentials"))
seen["me_with_client_token"] = post.get(base + "/me").status_code

wrong = OAuth2Session(post_id, "not the secret", token_endpoint_auth_method="client_secret_post")
seen["wrong_secret"] = refused(lambda: wrong.fetch_token(token_url, grant_type="client_credentials"))
greedy = OAuth2Session(basic_id, basic_secret, token_endpoint_auth_method="client_secret_basic", scope="payroll")
seen["bad_scope"] = refused(lambda: greedy.fetch_token(token_url, grant_type="client_credentials"))

print(json.dumps(seen))
