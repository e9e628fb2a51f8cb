# Drives the service's authorization code flow with Python's authlib (Debian's
# python3-authlib, on requests), as a confidential relying party: an
# authorization URL with PKCE (S256), state and nonce; the authorization
# endpoint answered with the user's browser session (its cookie, which the
# test opened); the code exchanged with client_secret_basic and the
# verifier; the ID token verified with the JWK Set (authlib.jose) and its
# nonce compared; userinfo; and the same code presented again, which must
# raise authlib's OAuthError. Prints one JSON object of what it saw;
# test/oidc-authlib.test.ts checks it.
import json
import sys
from urllib.parse import parse_qsl, urlparse

import requests
from authlib.common.security import generate_token
from authlib.integrations.base_client.errors import OAuthError
from authlib.integrations.requests_client import OAuth2Session
from authlib.jose import JsonWebKey, jwt

base, client_id, client_secret, redirect_uri, cookie_name, cookie_value = sys.argv[1:7]
config = requests.get(base + "/.well-known/openid-configuration").json()
seen = {}

verifier = generate_token(48)
nonce = generate_token(20)
session = OAuth2Session(
    client_id,
    client_secret,
    scope="openid profile email",
    redirect_uri=redirect_uri,
    code_challenge_method="S256",
)
url, state = session.create_authorization_url(config["authorization_endpoint"], code_verifier=verifier, nonce=nonce)
answer = requests.get(url, cookies={cookie_name: cookie_value}, allow_redirects=False)
seen["authorize_status"] = answer.status_code
location = answer.headers["location"]
token = session.fetch_token(config["token_endpoint"], authorization_response=location, code_verifier=verifier)
seen["token_type"] = token["token_type"]
seen["scope"] = token["scope"]

keys = JsonWebKey.import_key_set(requests.get(config["jwks_uri"]).json())
claims = jwt.decode(token["id_token"], keys, claims_options={"iss": {"essential": True, "value": config["issuer"]}, "aud": {"essential": True, "value": client_id}, "nonce": {"essential": True, "value": nonce}})
claims.validate()
seen["id_token"] = {name: claims[name] for name in ["sub", "aud", "nonce", "email", "amr"]}

seen["userinfo"] = session.get(config["userinfo_endpoint"]).json()

code = dict(parse_qsl(urlparse(location).query))["code"]
try:
    OAuth2Session(client_id, client_secret, redirect_uri=redirect_uri).fetch_token(
        config["token_endpoint"], code=code, code_verifier=verifier, grant_type="authorization_code"
    )
    seen["replayed_code"] = {"raised": None}
except OAuthError as error:
    seen["replayed_code"] = {"raised": "OAuthError", "error": error.error}

print(json.dumps(seen))
