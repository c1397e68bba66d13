package io.vivarium.apiv1.internal;

import java.util.List;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.json.JsonMapper;

import io.vivarium.api.ApiException;
import io.vivarium.api.Role;
import io.vivarium.api.TemplateInfo;
import io.vivarium.api.TemplateRequest;
import io.vivarium.api.TemplateService;
import io.vivarium.api.http.BinaryBody;
import io.vivarium.api.http.Route;

/**
 * Templates (docs/templates.md): made and deleted by operators, listed and shown to every role (so
 * that a client knows what it may create from). A template whose image is ready at once answers
 * 201; one still building 202, its build's progress then at {@code GET /v1/templates/{name}}.
 */
final class TemplateRoutes {
    private static final ObjectMapper JSON = JsonMapper.builder()
            .propertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
            .serializationInclusion(JsonInclude.Include.NON_NULL)
            .build();

    private TemplateRoutes() {
    }

    static List<Route> of(TemplateService templates) {
        return List.of(
                new Route("POST", "/templates", Role.OPERATOR, 201, r -> answer(templates.create(r.caller(),
                        r.body(TemplateRequest.class)))),
                new Route("GET", "/templates", Role.USER, 200, r -> templates.list(r.caller())),
                new Route("GET", "/templates/{name}", Role.USER, 200, r -> templates.get(r.caller(), r.pathParam("name"))),
                new Route("DELETE", "/templates/{name}", Role.OPERATOR, 204, r -> {
                    templates.delete(r.caller(), r.pathParam("name"));
                    return null;
                }));
    }

    /** The made template, 201 when it is ready and 202 while its image is built. */
    private static BinaryBody answer(TemplateInfo made) {
        byte[] json;
        try {
            json = JSON.writeValueAsBytes(made);
        } catch (JsonProcessingException e) {
            throw ApiException.internal("cannot write template " + made.name(), e);
        }
        BinaryBody body = BinaryBody.of("application/json", json);
        boolean ready = made.state().equals(TemplateInfo.READY);
        return new BinaryBody() {
            @Override
            public String contentType() {
                return body.contentType();
            }

            @Override
            public long length() {
                return body.length();
            }

            @Override
            public void writeTo(java.io.OutputStream out) throws java.io.IOException {
                body.writeTo(out);
            }

            @Override
            public int status(int routeStatus) {
                return ready ? routeStatus : 202;
            }
        };
    }
}
