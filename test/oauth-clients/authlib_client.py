# Drives the service with Python's authlib (Debian's python3-authlib, on
# requests), as a first-party app would: password grant, a call to /me with
# the token, refresh with rotation, a replayed refresh token, revocation, and
# a wrong password, which must raise authlib's OAuthError rather than hand
# back the error body as a "token". Prints one JSON object of what it saw;
# test/oauth-clients.test.ts checks it.
import json
import sys

from authlib.integrations.base_client.errors import OAuthError
from authlib.integrations.requests_client import OAuth2Session

base, email, password = sys.argv[1], sys.argv[2], sys.argv[3]
token_url = base + "/auth/token"
seen = {}


def refused(action):
    try:
        result = action()
    except OAuthError as error:
        return {"raised": "OAuthError", "error": error.error}
    return {"raised": None, "result": str(result)[:200]}


session = OAuth2Session(client_id="first-party-app", token_endpoint_auth_method="none")
token = session.fetch_token(token_url, username=email, password=password)
seen["token_type"] = token["token_type"]
seen["expires_in"] = token["expires_in"]
seen["me_status"] = session.get(base + "/me").status_code
seen["me_email"] = session.get(base + "/me").json()["email"]

first_refresh = token["refresh_token"]
renewed = session.refresh_token(token_url, refresh_token=first_refresh)
seen["rotated"] = renewed["refresh_token"] != first_refresh
seen["me_after_refresh"] = session.get(base + "/me").status_code
seen["replayed_refresh"] = refused(lambda: OAuth2Session(client_id="first-party-app", token_endpoint_auth_method="none").refresh_token(token_url, refresh_token=first_refresh))

revocation = session.revoke_token(base + "/auth/revoke", renewed["refresh_token"], token_type_hint="refresh_token")
seen["revoke_status"] = revocation.status_code
seen["revoke_body"] = revocation.json()
seen["refresh_after_revoke"] = refused(lambda: OAuth2Session(client_id="first-party-app", token_endpoint_auth_method="none").refresh_token(token_url, refresh_token=renewed["refresh_token"]))

stranger = OAuth2Session(client_id="first-party-app", token_endpoint_auth_method="none")
seen["wrong_password"] = refused(lambda: stranger.fetch_token(token_url, username=email, password="not the password"))
seen["token_after_wrong_password"] = stranger.token

print(json.dumps(seen))
