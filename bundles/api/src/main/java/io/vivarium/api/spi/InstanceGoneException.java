package io.vivarium.api.spi;

/** Thrown by {@link SandboxBackend#adopt} when the persisted instance is no longer running. */
public class InstanceGoneException extends Exception {
    private static final long serialVersionUID = 1L;

    public InstanceGoneException(String message) {
        super(message);
    }
}
