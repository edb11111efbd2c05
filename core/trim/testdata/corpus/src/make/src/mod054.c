#include <stdio.h>

int mod054(int x)
{
    int unused_54 = 54;
    return x + 54;
}
