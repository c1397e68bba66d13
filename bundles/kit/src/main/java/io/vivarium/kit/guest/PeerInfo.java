package io.vivarium.kit.guest;

import com.fasterxml.jackson.databind.JsonNode;

import java.util.HashSet;
import java.util.Set;

/**
 * What {@code guest-info} said about the peer.
 *
 * @param version the agent's version string
 * @param vivariumAgent true for our agent ({@code version} starts with {@code vivarium-agent}): it
 *        echoes ids (so one stream can carry many requests) and has the {@code vivarium-*} commands
 * @param commands the enabled commands
 */
public record PeerInfo(String version, boolean vivariumAgent, Set<String> commands) {
    static final String COMMAND = "guest-info";
    private static final int MAX_COMMANDS = 1024;
    private static final int MAX_NAME = 128;

    public PeerInfo {
        commands = Set.copyOf(commands);
    }

    public boolean supports(String command) {
        return commands.contains(command);
    }

    static PeerInfo parse(JsonNode value) {
        Wire.requireObject(value, COMMAND);
        String version = Wire.requireText(value, "version", COMMAND);
        if (version.length() > MAX_NAME) {
            throw Wire.malformed(COMMAND, "\"version\" is longer than " + MAX_NAME + " characters", null);
        }
        JsonNode list = value.get("supported_commands");
        if (list == null || !list.isArray() || list.size() > MAX_COMMANDS) {
            throw Wire.malformed(COMMAND, "\"supported_commands\" is missing, not a list or longer than "
                    + MAX_COMMANDS, null);
        }
        Set<String> enabled = new HashSet<>();
        for (JsonNode command : list) {
            Wire.requireObject(command, COMMAND);
            String name = Wire.requireText(command, "name", COMMAND);
            if (name.length() > MAX_NAME) {
                throw Wire.malformed(COMMAND, "a command name is longer than " + MAX_NAME + " characters", null);
            }
            if (Wire.requireBoolean(command, "enabled", COMMAND)) {
                enabled.add(name);
            }
        }
        return new PeerInfo(version, version.startsWith("vivarium-agent"), enabled);
    }
}
