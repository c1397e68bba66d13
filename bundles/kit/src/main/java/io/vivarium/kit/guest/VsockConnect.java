package io.vivarium.kit.guest;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/**
 * The start of a connection to a guest's vsock port through its VMM's Unix socket (Firecracker's
 * and Cloud Hypervisor's host-initiated connections): {@code CONNECT <port>\n}, then the VMM's
 * {@code OK <host port>\n}; anything else, or nothing, means no listener on that port.
 */
final class VsockConnect implements UnixSocketTransport.Preamble {
    /** "OK " and a 32-bit port number: a longer answer is not the VMM's. */
    private static final int MAX_ANSWER = 16;

    private final Path socket;
    private final int port;

    VsockConnect(Path socket, int port) {
        this.socket = socket;
        this.port = port;
    }

    @Override
    public void run(LineConnection connection, Deadline deadline) {
        connection.write(("CONNECT " + port + "\n").getBytes(StandardCharsets.US_ASCII), deadline);
        String answer;
        try {
            answer = new String(connection.readLine(MAX_ANSWER, deadline), StandardCharsets.US_ASCII).strip();
        } catch (GuestAgentException e) {
            throw GuestAgentException.peer("the VMM's vsock socket " + socket + " did not connect to guest port " + port
                    + " (is the guest's agent listening yet?): " + e.getMessage(), e);
        }
        if (!answer.matches("OK [0-9]{1,10}")) {
            throw GuestAgentException.peer("the VMM's vsock socket " + socket + " answered CONNECT " + port + " with '"
                    + answer + "', not OK");
        }
    }
}
