package kubejob

import (
	"regexp"
	"strings"
)

// The API server's checks of the names and values surge writes, so that a
// bad flag is refused here, named, rather than by kubectl apply. They
// follow k8s.io/apimachinery's validation (IsDNS1035Label, IsDNS1123Label,
// IsDNS1123Subdomain, IsConfigMapKey, IsEnvVarName) and
// resource.ParseQuantity; the tests hold them to those functions.
var (
	dns1035Label = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)
	dns1123Label = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	dns1123Sub   = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	configMapKey = regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)
	envVarName   = regexp.MustCompile(`^[-._a-zA-Z][-._a-zA-Z0-9]*$`)
	// A quantity: a decimal number and a binary (Ki…Ei) or decimal (n…E)
	// suffix or a decimal exponent.
	quantityRe = regexp.MustCompile(`^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$`)
)

func validDNSLabel(s string, firstLetter bool) bool {
	re := dns1123Label
	if firstLetter {
		re = dns1035Label
	}
	return len(s) <= 63 && re.MatchString(s)
}

func validSubdomain(s string) bool { return len(s) <= 253 && dns1123Sub.MatchString(s) }

// noChdir: "." and ".." and a leading ".." are refused as key and env names.
func noChdir(s string) bool { return s != "." && !strings.HasPrefix(s, "..") }

func validConfigMapKey(s string) bool {
	return len(s) <= 253 && configMapKey.MatchString(s) && noChdir(s)
}

func validEnvVarName(s string) bool { return envVarName.MatchString(s) && noChdir(s) }

func validQuantity(s string) bool { return quantityRe.MatchString(s) }
