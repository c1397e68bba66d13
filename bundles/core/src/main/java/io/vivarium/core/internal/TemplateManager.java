package io.vivarium.core.internal;

import java.util.List;

import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Reference;

import io.vivarium.api.Caller;
import io.vivarium.api.TemplateInfo;
import io.vivarium.api.TemplateRequest;
import io.vivarium.api.TemplateService;

/** The {@link TemplateService} ({@code /v1/templates}) as a component: the {@link Templates} of the {@link SandboxManager}'s {@link Core}. */
@Component(service = TemplateService.class)
public class TemplateManager implements TemplateService {
    @Reference
    private SandboxManager manager;
    private Templates templates;

    @Activate
    void activate() {
        templates = manager.core().templates();
    }

    @Override
    public TemplateInfo create(Caller caller, TemplateRequest request) {
        return templates.create(caller, request);
    }

    @Override
    public List<TemplateInfo> list(Caller caller) {
        return templates.list(caller);
    }

    @Override
    public TemplateInfo get(Caller caller, String name) {
        return templates.get(caller, name);
    }

    @Override
    public void delete(Caller caller, String name) {
        templates.delete(caller, name);
    }
}
