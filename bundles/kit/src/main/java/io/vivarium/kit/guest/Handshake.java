package io.vivarium.kit.guest;

import com.fasterxml.jackson.databind.JsonNode;

import java.util.concurrent.ThreadLocalRandom;

/** What every new connection does before its first request: resynchronise, then identify the peer. */
final class Handshake {
    private static final String SYNC = "guest-sync-delimited";
    /** Stale bytes skipped before the delimiter: a whole stale stock exec status may be pending. */
    private static final int MAX_DISCARD = Commands.MAX_STOCK_STATUS_LINE + 1024;
    private static final int MAX_STALE_LINES = 16;

    private Handshake() {
    }

    /**
     * Sends {@code guest-sync-delimited} with a fresh id, skips everything up to the 0xFF the agent
     * writes before its answer, then reads lines until the one returning that id.
     */
    static void sync(LineConnection connection, Deadline deadline) {
        int id = ThreadLocalRandom.current().nextInt(1, Integer.MAX_VALUE);
        connection.write(Wire.request(SYNC, Wire.object().put("id", id), null), deadline);
        connection.discardThroughDelimiter(MAX_DISCARD, deadline);
        for (int i = 0; i < MAX_STALE_LINES; i++) {
            byte[] line = connection.readLine(Commands.MAX_LINE, deadline);
            Wire.Answer<JsonNode> answer;
            try {
                answer = Wire.parse(line, SYNC, Wire.TREE);
            } catch (GuestAgentException staleGarbage) {
                continue;
            }
            JsonNode value = answer.valueOrThrow(SYNC);
            if (value.isIntegralNumber() && value.canConvertToLong() && value.longValue() == id) {
                return;
            }
        }
        throw GuestAgentException.peer("no answer to " + SYNC + " on " + connection.name());
    }

    /** {@code guest-info} on a connection that is not shared yet. */
    static PeerInfo identify(LineConnection connection, Deadline deadline) {
        connection.write(Wire.request(PeerInfo.COMMAND, null, null), deadline);
        byte[] line = connection.readLine(Commands.MAX_LINE, deadline);
        return PeerInfo.parse(Wire.parse(line, PeerInfo.COMMAND, Wire.TREE).valueOrThrow(PeerInfo.COMMAND));
    }
}
