package io.vivarium.client;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/** The operations of docs/openapi.json a client method calls, e.g. {@code "GET /v1/sandboxes/{id}"}. */
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.METHOD)
public @interface Route {
    String[] value();
}
