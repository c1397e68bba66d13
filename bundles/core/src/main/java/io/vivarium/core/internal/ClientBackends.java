package io.vivarium.core.internal;

import java.util.Arrays;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

import io.vivarium.api.ApiException;
import io.vivarium.api.Caller;
import io.vivarium.api.Role;

/**
 * The backends a client may name at create without a template (docs/templates.md): the operator's
 * setting {@code client_backends}, {@value #ALL} or a comma-separated list. A template names its
 * own backend, and an operator may name any; a create that names none gets the default backend.
 *
 * @param names the backends clients may name, or null for every installed one
 */
record ClientBackends(Set<String> names) {
    static final String ALL = "all";
    static final ClientBackends EVERY = new ClientBackends(null);

    /** The setting as written: {@value #ALL} or empty for every backend, else a comma-separated list of names. */
    static ClientBackends of(String setting) {
        String s = setting == null ? "" : setting.strip();
        if (s.isEmpty() || s.equals(ALL)) {
            return EVERY;
        }
        return new ClientBackends(Arrays.stream(s.split(",")).map(String::strip).filter(n -> !n.isEmpty())
                .collect(Collectors.toUnmodifiableSet()));
    }

    boolean allows(String backend) {
        return names == null || names.contains(backend);
    }

    /** 403 when {@code caller} (not an operator) names {@code backend}, which the setting leaves out. */
    void check(Caller caller, String backend) {
        if (backend == null || backend.isEmpty() || caller.role() == Role.OPERATOR || allows(backend)) {
            return;
        }
        throw ApiException.forbidden("backend " + backend + " may not be named by clients on this daemon: the operator "
                + "lets them name " + (names.isEmpty() ? "none" : String.join(", ", new TreeSet<>(names)))
                + " (the setting client_backends, or serve --client-backends NAME,... or all); create from a template "
                + "that names it (GET /v1/templates), or leave backend out for the default");
    }
}
