#include <stdio.h>

int mod041(int x)
{
    return x + 41;
}
