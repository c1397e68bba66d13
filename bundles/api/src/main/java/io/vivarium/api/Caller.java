package io.vivarium.api;

import java.util.Objects;

/** The authenticated principal of a request: the tenant it acts for and its role. */
public record Caller(String tenant, Role role) {
    public Caller {
        Objects.requireNonNull(tenant, "tenant");
        Objects.requireNonNull(role, "role");
    }
}
