package image

import (
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// SBOMMediaType is the media type of the SBOM document and of the artifact
// that attaches it to the image (an OCI 1.1 referrer).
const SBOMMediaType = "application/spdx+json"

// The SPDX 2.3 document, as much of it as an SBOM of Go binaries needs:
// one package per binary and per Go module linked into it, with the
// module's checksum (go.sum's h1: hash) and purl.
type spdxDocument struct {
	SPDXVersion       string             `json:"spdxVersion"`
	DataLicense       string             `json:"dataLicense"`
	SPDXID            string             `json:"SPDXID"`
	Name              string             `json:"name"`
	DocumentNamespace string             `json:"documentNamespace"`
	CreationInfo      spdxCreationInfo   `json:"creationInfo"`
	DocumentDescribes []string           `json:"documentDescribes"`
	Packages          []spdxPackage      `json:"packages"`
	Relationships     []spdxRelationship `json:"relationships"`
}

type spdxCreationInfo struct {
	Created  string   `json:"created"`
	Creators []string `json:"creators"`
}

type spdxPackage struct {
	SPDXID           string            `json:"SPDXID"`
	Name             string            `json:"name"`
	VersionInfo      string            `json:"versionInfo,omitempty"`
	DownloadLocation string            `json:"downloadLocation"`
	FilesAnalyzed    bool              `json:"filesAnalyzed"`
	Checksums        []spdxChecksum    `json:"checksums,omitempty"`
	ExternalRefs     []spdxExternalRef `json:"externalRefs,omitempty"`
	PrimaryPurpose   string            `json:"primaryPackagePurpose,omitempty"`
	Comment          string            `json:"comment,omitempty"`
}

type spdxChecksum struct {
	Algorithm string `json:"algorithm"`
	Value     string `json:"checksumValue"`
}

type spdxExternalRef struct {
	Category string `json:"referenceCategory"`
	Type     string `json:"referenceType"`
	Locator  string `json:"referenceLocator"`
}

type spdxRelationship struct {
	Element string `json:"spdxElementId"`
	Type    string `json:"relationshipType"`
	Related string `json:"relatedSpdxElement"`
}

// SPDX writes the SBOM of the image whose index has digest: a package for
// the image, one for each binary (with its SHA-256) and one for each Go
// module any binary links, read from the build information Go embeds. It
// is deterministic: the same binaries give the same document.
func SPDX(binaries []string, o Options, digest v1.Hash) ([]byte, error) {
	image := spdxPackage{
		SPDXID: "SPDXRef-Image", Name: "muster-operator", VersionInfo: o.Version,
		DownloadLocation: "NOASSERTION", PrimaryPurpose: "CONTAINER",
		Checksums:    []spdxChecksum{{Algorithm: "SHA256", Value: digest.Hex}},
		ExternalRefs: []spdxExternalRef{{Category: "PACKAGE-MANAGER", Type: "purl", Locator: "pkg:oci/muster-operator@" + digest.String() + "?repository_url=" + strings.TrimSuffix(Name, "/muster-operator")}},
	}
	doc := spdxDocument{
		SPDXVersion: "SPDX-2.3", DataLicense: "CC0-1.0", SPDXID: "SPDXRef-DOCUMENT",
		Name:              "muster-operator-" + o.Version,
		DocumentNamespace: Source + "/sbom/muster-operator/" + o.Version + "/" + digest.Hex,
		CreationInfo: spdxCreationInfo{
			Created:  o.Time.UTC().Format(time.RFC3339),
			Creators: []string{"Tool: muster tools/image", "Organization: Muster"},
		},
		DocumentDescribes: []string{image.SPDXID},
		Packages:          []spdxPackage{image},
	}
	modules := map[string]spdxPackage{}
	for i, bin := range binaries {
		bi, err := buildinfo.ReadFile(bin)
		if err != nil {
			return nil, fmt.Errorf("sbom: %s: %w", bin, err)
		}
		sum, err := fileSHA256(bin)
		if err != nil {
			return nil, err
		}
		binID := fmt.Sprintf("SPDXRef-Binary-%d", i)
		doc.Packages = append(doc.Packages, spdxPackage{
			SPDXID: binID, Name: "muster-operator", VersionInfo: o.Version, DownloadLocation: "NOASSERTION",
			PrimaryPurpose: "APPLICATION", Checksums: []spdxChecksum{{Algorithm: "SHA256", Value: sum}},
			Comment: "built with " + bi.GoVersion + " for " + setting(bi, "GOOS") + "/" + setting(bi, "GOARCH"),
		})
		doc.Relationships = append(doc.Relationships, spdxRelationship{image.SPDXID, "CONTAINS", binID})
		deps := append([]*debugModule{{Path: "stdlib", Version: strings.TrimPrefix(bi.GoVersion, "go")}}, modulesOf(bi)...)
		for _, m := range deps {
			id := "SPDXRef-Module-" + spdxID(m.Path+"-"+m.Version)
			if _, ok := modules[id]; !ok {
				p := spdxPackage{
					SPDXID: id, Name: m.Path, VersionInfo: m.Version, PrimaryPurpose: "LIBRARY",
					DownloadLocation: "NOASSERTION",
					ExternalRefs:     []spdxExternalRef{{Category: "PACKAGE-MANAGER", Type: "purl", Locator: "pkg:golang/" + m.Path + "@" + m.Version}},
				}
				if m.Path != "stdlib" {
					p.DownloadLocation = "https://proxy.golang.org/" + m.Path + "/@v/" + m.Version + ".zip"
				}
				if m.Sum != "" {
					// go.sum's h1: is a SHA-256 of the module's file list, base64.
					p.Comment = "go.sum " + m.Sum
				}
				modules[id] = p
			}
			doc.Relationships = append(doc.Relationships, spdxRelationship{binID, "DEPENDS_ON", id})
		}
	}
	ids := make([]string, 0, len(modules))
	for id := range modules {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		doc.Packages = append(doc.Packages, modules[id])
	}
	return json.MarshalIndent(doc, "", "  ")
}

type debugModule struct{ Path, Version, Sum string }

// modulesOf is the main module (as the release) and every dependency, a
// replaced module under its replacement.
func modulesOf(bi *buildinfo.BuildInfo) []*debugModule {
	var out []*debugModule
	for _, d := range bi.Deps {
		if d.Replace != nil {
			d = d.Replace
		}
		out = append(out, &debugModule{Path: d.Path, Version: d.Version, Sum: d.Sum})
	}
	return out
}

func setting(bi *buildinfo.BuildInfo, key string) string {
	for _, s := range bi.Settings {
		if s.Key == key {
			return s.Value
		}
	}
	return ""
}

// spdxID keeps what SPDX allows in an identifier: letters, digits, '.' and '-'.
func spdxID(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-':
			return r
		}
		return '-'
	}, s)
}

func fileSHA256(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:]), nil
}
