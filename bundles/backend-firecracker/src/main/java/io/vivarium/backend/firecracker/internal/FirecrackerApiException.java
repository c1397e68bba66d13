package io.vivarium.backend.firecracker.internal;

import java.io.IOException;

/** Firecracker refused a request: its status and its {@code fault_message}. */
final class FirecrackerApiException extends IOException {
    private static final long serialVersionUID = 1L;

    private final int status;
    private final String faultMessage;

    FirecrackerApiException(String request, int status, String faultMessage) {
        super("Firecracker refused " + request + " (" + status + "): " + faultMessage);
        this.status = status;
        this.faultMessage = faultMessage;
    }

    int status() {
        return status;
    }

    String faultMessage() {
        return faultMessage;
    }
}
