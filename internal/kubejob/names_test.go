package kubejob

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

// TestChecksAgreeWithAPIMachinery holds the package's own name and
// quantity checks (the binary does not link apimachinery) to the API's.
func TestChecksAgreeWithAPIMachinery(t *testing.T) {
	names := []string{"", "a", "bench", "bench-1", "1bench", "-a", "a-", "A", "a_b", "a.b", "a..b", ".a", "..a", ".", "..",
		"vllm-key", "vllm.key", "api-key", "API_KEY", "OPENAI_API_KEY", "my.env-name", "1KEY", "_KEY", "KEY 1", "ключ",
		strings.Repeat("a", 63), strings.Repeat("a", 64), strings.Repeat("a.", 126) + "a", strings.Repeat("a", 254)}
	for _, s := range names {
		for _, ck := range []struct {
			what string
			ours bool
			api  []string
		}{
			{"DNS-1035 label", validDNSLabel(s, true), validation.IsDNS1035Label(s)},
			{"DNS-1123 label", validDNSLabel(s, false), validation.IsDNS1123Label(s)},
			{"DNS-1123 subdomain", validSubdomain(s), validation.IsDNS1123Subdomain(s)},
			{"ConfigMap key", validConfigMapKey(s), validation.IsConfigMapKey(s)},
			{"env var name", validEnvVarName(s), validation.IsEnvVarName(s)},
		} {
			if ck.ours != (len(ck.api) == 0) {
				t.Errorf("%s %q: ours %v, apimachinery %q", ck.what, s, ck.ours, ck.api)
			}
		}
	}
	for _, q := range []string{"1", "0", "1000m", "500m", "0.5", ".5", "5.", "1.5Gi", "512Mi", "1Gi", "2Ti", "1e3", "1E-3", "+1", "-1",
		"10k", "1M", "1K", "1Mb", "lots", "", "1 Gi", "Gi", "1.2.3", "1e", "1i", "0x10", "1m5"} {
		_, err := resource.ParseQuantity(q)
		if q == "Gi" && !validQuantity(q) {
			continue // the API reads a bare suffix as 0; as a request it is a mistake, refused here
		}
		if validQuantity(q) != (err == nil) {
			t.Errorf("quantity %q: ours %v, resource.ParseQuantity %v", q, validQuantity(q), err)
		}
	}
}
