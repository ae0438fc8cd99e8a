package io.tensorsocket.flight;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import org.apache.arrow.flight.CallHeaders;
import org.apache.arrow.flight.CallStatus;
import org.apache.arrow.flight.auth2.Auth2Constants;
import org.apache.arrow.flight.auth2.AuthUtilities;
import org.apache.arrow.flight.auth2.CallHeaderAuthenticator;

/**
 * Flight's bearer authentication with one shared token: every call must carry
 * {@code authorization: Bearer <token>}; anything else is refused as UNAUTHENTICATED with a message that
 * says what to pass. Tokens are compared in constant time.
 */
final class BearerAuth implements CallHeaderAuthenticator {
    private final byte[] token;

    BearerAuth(String token) {
        if (token == null || token.isBlank()) {
            throw new IllegalArgumentException("the shared token is empty");
        }
        this.token = token.getBytes(StandardCharsets.UTF_8);
    }

    @Override
    public AuthResult authenticate(CallHeaders headers) {
        String given = AuthUtilities.getValueFromAuthHeader(headers, Auth2Constants.BEARER_PREFIX);
        if (given == null) {
            throw CallStatus.UNAUTHENTICATED
                    .withDescription("this TensorSocket server needs a token;"
                            + " pass the server's shared token (--token / --token-file)")
                    .toRuntimeException();
        }
        if (!MessageDigest.isEqual(token, given.getBytes(StandardCharsets.UTF_8))) {
            throw CallStatus.UNAUTHENTICATED
                    .withDescription(
                            "the token does not match this TensorSocket server's;" + " pass the server's shared token")
                    .toRuntimeException();
        }
        return () -> "tensorsocket";
    }
}
