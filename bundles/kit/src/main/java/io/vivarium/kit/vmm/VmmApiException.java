package io.vivarium.kit.vmm;

import java.io.IOException;

/** The VMM answered a request with a status other than 2xx: the status and what it said. */
public final class VmmApiException extends IOException {
    private static final long serialVersionUID = 1L;

    private final int status;
    private final String reason;

    /**
     * @param request the request refused, e.g. {@code PUT /boot-source}
     * @param reason the VMM's own words (its error message, or its body as it came)
     */
    public VmmApiException(String vmm, String request, int status, String reason) {
        super(vmm + " refused " + request + " (" + status + "): " + reason);
        this.status = status;
        this.reason = reason;
    }

    public int status() {
        return status;
    }

    /** The VMM's own words. */
    public String reason() {
        return reason;
    }
}
